"""Load the expectation suites (JSON, in ``expectations/``) without importing GX.

Two families of suites, one loader: the *generation* suites (``generation_*.json``,
the gate before publication) and the *change* suites (``changes_*.json``, the rows a
changes run wrote). A suite file is Great Expectations' own suite JSON (``name``,
``expectations`` with ``type``/``kwargs``/``meta``) plus this project's conventions,
all in ``meta``:

* suite ``meta.batch``: which table the suite runs on. Generation suites: ``"streams"``
  (one row per stream) or ``"entries"`` (one row per entry); change suites:
  ``"changes_rows"`` (one row per change) or ``"changes_stream_counts"`` (one row per
  stream and window, lake against source);
* expectation ``meta.requires``: inputs a check needs (``"topology"``: the ring the
  generation was made for; ``"shard_counts"``: that ring's shard counts, which raft
  stores and gossip does not; ``"previous"``: the previous generation;
  ``"source_counts"``: the source's per-stream row counts). Without them the check is
  skipped, and the skip is reported, never silent;
* expectation ``meta.layouts``: the stream layouts a rule belongs to, ``"vnodes"``
  (a generation: streams per vnode and shard) and/or ``"tablets"`` (a table's stream
  set: one stream per tablet, on the tablet's last token, index 0); both when absent.
  A rule of the other layout does not apply at all, so it is left out, not "skipped".

Keeping this apart from GX lets the CLI and tests inspect suites cheaply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcgen.core.errors import TerminalError
from cdcgen.env_settings import EnvSettings, env

#: The suites the package ships (package data; the repository's ``expectations/`` is a
#: link to this folder, so the suites exist once).
PACKAGED_SUITES = Path(__file__).resolve().parent / "expectations"
REQUIREMENTS = frozenset({"topology", "shard_counts", "previous", "source_counts"})
LAYOUTS = frozenset({"vnodes", "tablets"})


class SuiteSettings(EnvSettings):
    expectations_dir: Path = env("CDCGEN_EXPECTATIONS_DIR", PACKAGED_SUITES)
    """The folder of the Great Expectations suites (JSON) the checks run; unset, the
    suites installed with the package (``expectations/`` in the repository)."""


EXPECTATIONS_DIR_ENV = SuiteSettings.env_names()["expectations_dir"]


@dataclass(frozen=True)
class SuiteFamily:
    """The suite files of one gate, in run order, and the batches they may run on."""

    name: str
    files: tuple[str, ...]
    batches: frozenset[str]


GENERATION_SUITES = SuiteFamily(
    "generation",
    ("generation_coverage.json", "generation_format.json", "generation_colocation.json"),
    frozenset({"streams", "entries"}),
)
CHANGE_SUITES = SuiteFamily(
    "changes",
    ("changes_rows.json", "changes_counts.json"),
    frozenset({"changes_rows", "changes_stream_counts"}),
)


class SuiteError(TerminalError, ValueError):
    """A suite file that cannot be used (missing, bad JSON, unknown batch or requirement)."""


@dataclass(frozen=True)
class SuiteSpec:
    """One suite, with the expectations whose requirements are met."""

    name: str
    batch: str
    expectations: tuple[dict[str, Any], ...]
    skipped: tuple[str, ...]  # checks left out for a missing input, as "check (needs X)"
    meta: Mapping[str, Any]
    path: Path


def expectations_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$CDCGEN_EXPECTATIONS_DIR`` or the suites installed with the package."""
    return SuiteSettings.from_env(env).expectations_dir


def check_name(expectation: Mapping[str, Any]) -> str:
    """The human name of a check: ``meta.check``, else the expectation type."""
    meta = expectation.get("meta") or {}
    return str(meta.get("check") or expectation.get("type"))


def load_suite(
    path: Path,
    available: Iterable[str] = (),
    layout: str = "vnodes",
    family: SuiteFamily = GENERATION_SUITES,
) -> SuiteSpec:
    """One suite of ``family`` with the expectations of ``layout`` whose inputs are
    ``available``."""
    if layout not in LAYOUTS:
        raise SuiteError(f"unknown stream layout {layout!r}; known: {sorted(LAYOUTS)}")
    raw = _read(path)
    name = raw.get("name")
    meta = raw.get("meta") or {}
    batch = meta.get("batch")
    if not isinstance(name, str) or not name:
        raise SuiteError(f"suite {path}: missing 'name'")
    if batch not in family.batches:
        raise SuiteError(
            f"suite {path}: meta.batch of a {family.name} suite must be one of "
            f"{sorted(family.batches)}, got {batch!r}"
        )
    have = set(available)
    kept: list[dict[str, Any]] = []
    skipped: list[str] = []
    for i, expectation in enumerate(raw["expectations"]):
        if not isinstance(expectation, dict) or not isinstance(expectation.get("type"), str):
            raise SuiteError(f"suite {path}: expectations[{i}] needs a 'type'")
        if layout not in _layouts(path, i, expectation):
            continue
        missing = [need for need in _requirements(path, i, expectation) if need not in have]
        if missing:
            skipped.append(f"{check_name(expectation)} (needs {', '.join(missing)})")
        else:
            kept.append(expectation)
    return SuiteSpec(name, str(batch), tuple(kept), tuple(skipped), meta, path)


def load_suites(
    directory: Path | None = None,
    available: Iterable[str] = (),
    layout: str = "vnodes",
    family: SuiteFamily = GENERATION_SUITES,
) -> list[SuiteSpec]:
    """Every suite of ``family`` for ``layout``, in the family's order."""
    base = directory or expectations_dir()
    have = tuple(available)
    return [load_suite(base / name, have, layout, family) for name in family.files]


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SuiteError(f"cannot read suite {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise SuiteError(f"suite {path} is not valid JSON: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("expectations"), list):
        raise SuiteError(f"suite {path}: expected an object with an 'expectations' list")
    return raw


def _layouts(path: Path, index: int, expectation: Mapping[str, Any]) -> set[str]:
    layouts = set((expectation.get("meta") or {}).get("layouts") or LAYOUTS)
    if layouts - LAYOUTS:
        raise SuiteError(
            f"suite {path}: expectations[{index}] names unknown layout(s) "
            f"{sorted(layouts - LAYOUTS)}; known: {sorted(LAYOUTS)}"
        )
    return layouts


def _requirements(path: Path, index: int, expectation: Mapping[str, Any]) -> list[str]:
    needs = list((expectation.get("meta") or {}).get("requires") or [])
    unknown = set(needs) - REQUIREMENTS
    if unknown:
        raise SuiteError(
            f"suite {path}: expectations[{index}] requires unknown input(s) "
            f"{sorted(unknown)}; known: {sorted(REQUIREMENTS)}"
        )
    return [str(need) for need in needs]
