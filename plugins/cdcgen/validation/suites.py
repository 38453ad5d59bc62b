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

Each expectation is read once into a :class:`SuiteCheck`: GX's own configuration, handed
to GX as written, beside the name, layouts and inputs this project reads from its meta.
Keeping this apart from GX lets the CLI and tests inspect suites cheaply.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from cdcgen.env_settings import EnvSettings, env
from cdcgen.validation.errors import SuiteError

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


@dataclass(frozen=True)
class SuiteCheck:
    """One expectation of a suite: GX's configuration as the file has it (``type``,
    ``kwargs``, ``meta``), its check's name, the layouts it belongs to and the inputs it
    needs."""

    config: Mapping[str, Any]
    type: str
    name: str
    layouts: frozenset[str]
    requires: tuple[str, ...]


class _CheckMeta(BaseModel):
    """What this project reads from an expectation's ``meta`` (GX reads the rest)."""

    check: str | None = None
    requires: tuple[str, ...] = ()
    layouts: tuple[str, ...] = ()


@dataclass(frozen=True)
class SuiteSpec:
    """One suite, with the expectations whose requirements are met."""

    name: str
    batch: str
    expectations: tuple[SuiteCheck, ...]
    skipped: tuple[str, ...]  # checks left out for a missing input, as "check (needs X)"
    meta: Mapping[str, Any]
    path: Path


def expectations_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$CDCGEN_EXPECTATIONS_DIR`` or the suites installed with the package."""
    return SuiteSettings.from_env(env).expectations_dir


def check_name(kind: str, check: object = None) -> str:
    """The human name of a check: its ``meta.check``, else its expectation ``kind``."""
    return str(check or kind)


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
    kept: list[SuiteCheck] = []
    skipped: list[str] = []
    for i, expectation in enumerate(raw["expectations"]):
        check = _check(path, i, expectation)
        if layout not in check.layouts:
            continue
        missing = [need for need in check.requires if need not in have]
        if missing:
            skipped.append(f"{check.name} (needs {', '.join(missing)})")
        else:
            kept.append(check)
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


def _check(path: Path, index: int, expectation: object) -> SuiteCheck:
    """``expectations[index]`` of the suite file ``path``, its meta checked."""
    where = f"suite {path}: expectations[{index}]"
    if not isinstance(expectation, dict) or not isinstance(expectation.get("type"), str):
        raise SuiteError(f"{where} needs a 'type'")
    try:
        meta = _CheckMeta.model_validate(expectation.get("meta") or {})
    except ValidationError as exc:
        raise SuiteError(f"{where}: unusable meta: {exc}") from None
    layouts = frozenset(meta.layouts or LAYOUTS)
    if layouts - LAYOUTS:
        raise SuiteError(
            f"{where} names unknown layout(s) {sorted(layouts - LAYOUTS)}; known: {sorted(LAYOUTS)}"
        )
    unknown = set(meta.requires) - REQUIREMENTS
    if unknown:
        raise SuiteError(
            f"{where} requires unknown input(s) {sorted(unknown)}; known: {sorted(REQUIREMENTS)}"
        )
    kind = expectation["type"]
    return SuiteCheck(expectation, kind, check_name(kind, meta.check), layouts, meta.requires)
