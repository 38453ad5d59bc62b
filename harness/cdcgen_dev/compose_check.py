"""``docker-compose.yaml`` held to compose's own loader, on machines without Docker.

No container engine runs on the development machines, so the compose file is checked by
compose-go (github.com/compose-spec/compose-go/v2), the library ``docker compose`` itself
loads files with: the compose schema, interpolation, ``depends_on`` references, merge
keys, ports and durations. ``tools/compose-check`` is a few lines of Go over it, pinned
by its ``go.mod``/``go.sum``; :func:`build` compiles it with the machine's Go toolchain
(``go`` on the path, or ``/usr/local/go/bin/go``) into ``var/tools/``, again only when its
sources change, and :func:`check` runs it on a file.

``python -m cdcgen_dev.compose_check [FILE]`` (``make compose-check``) does both.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from cdcgen_dev.paths import REPO_ROOT

SOURCE = REPO_ROOT / "tools" / "compose-check"
BINARY = REPO_ROOT / "var" / "tools" / "compose-check"
GO_FALLBACK = Path("/usr/local/go/bin/go")


class ComposeCheckUnavailable(RuntimeError):
    """The checker cannot be built here (no Go toolchain, or the build failed)."""


def go_binary() -> str:
    found = shutil.which("go") or (str(GO_FALLBACK) if GO_FALLBACK.exists() else None)
    if found is None:
        raise ComposeCheckUnavailable(
            "no Go toolchain: install Go (https://go.dev/dl/) to validate docker-compose.yaml "
            "with compose-go"
        )
    return found


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in [SOURCE / "go.mod", SOURCE / "go.sum", *sorted(SOURCE.glob("*.go"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build(binary: Path = BINARY) -> Path:
    """The compiled checker, rebuilt when ``tools/compose-check`` changed (a Go build,
    and the pinned modules' download the first time)."""
    stamp = binary.with_suffix(".sha256")
    want = _sources_digest()
    if binary.exists() and stamp.exists() and stamp.read_text() == want:
        return binary
    binary.parent.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "GOTOOLCHAIN": "local",  # the machine's Go, never a downloaded toolchain
        "GOFLAGS": "-mod=readonly",  # go.sum pins every module: nothing is resolved anew
        "CGO_ENABLED": "0",
    }
    done = subprocess.run(
        [go_binary(), "build", "-trimpath", "-o", str(binary), "."],
        cwd=SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise ComposeCheckUnavailable(f"go build of {SOURCE} failed:\n{done.stderr}")
    stamp.write_text(want)
    return binary


def check(
    file: Path, env: dict[str, str] | None = None, binary: Path = BINARY
) -> subprocess.CompletedProcess[str]:
    """Load ``file`` as compose would; returncode 0 and the resolved project as JSON on
    stdout, or non-zero and compose's message on stderr."""
    flags = [arg for key, value in (env or {}).items() for arg in ("-env", f"{key}={value}")]
    return subprocess.run(
        [str(binary), *flags, str(file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": os.environ.get("PATH", "")},  # interpolation sees -env only
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    file = Path(args[0]) if args else REPO_ROOT / "docker-compose.yaml"
    done = check(file, binary=build())
    if done.returncode == 0:
        print(f"{file}: compose-go accepts it")
    else:
        print(f"{file}: compose-go refuses it:\n{done.stderr}", file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
