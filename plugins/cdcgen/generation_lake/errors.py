"""Every exception class cdcgen.generation_lake raises, in one place: a reader looks here
for what can go wrong in the package and whether another attempt helps (each is terminal or
transient, :mod:`cdcgen.core.errors`; tests/unit/test_error_kinds.py lists them)."""

from __future__ import annotations

from cdcgen.core.errors import TerminalError


class ArtifactError(TerminalError):
    """Terminal: a generation that is not extracted, or altered since extraction."""
