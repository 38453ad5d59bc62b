"""Numbers as users type them, parsed strictly, and hostile text echoed briefly.

Python's ``int()`` is generous: it strips spaces, accepts ``1_000`` and any Unicode digit
(``٥``), and spends quadratic time on thousands of digits before refusing them. A token
or a count on a command line, a file or a row is either plain ASCII decimal or a mistake
worth naming, so every such text goes through :func:`parse_decimal`; and an error message
shows at most the start of what it was given (:func:`echo`), never megabytes of it. JSON
files are read by :func:`load_json`, whose errors are one line whatever the file holds.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import IO, Any

from cdcgen.core.errors import UnreadableJson

#: Digits of the widest value parsed here: a signed 64-bit token has at most 19.
MAX_DIGITS = 20
_DECIMAL = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
_ECHO_LIMIT = 40


def echo(text: object) -> str:
    """``repr`` of ``text``, cut to its first characters when it is long."""
    shown = repr(text)
    if len(shown) <= _ECHO_LIMIT:
        return shown
    return f"{shown[:_ECHO_LIMIT]}... ({len(str(text))} characters)"


def parse_decimal(text: str, what: str) -> int:
    """An ASCII decimal integer (optional ``-``, no spaces, ``_`` or other digits)."""
    if not isinstance(text, str) or not _DECIMAL.fullmatch(text):
        raise ValueError(
            f"{what} {echo(text)} is not a decimal integer "
            f"(ASCII digits, an optional '-', at most {MAX_DIGITS} digits)"
        )
    return int(text)


def load_json(handle: IO[str], where: str) -> Any:
    """``json.load``, with every way hostile text makes it fail named (not a traceback):
    invalid JSON, text that is not UTF-8, integers of thousands of digits (``int``'s
    limit), and nesting deep enough to exhaust the recursion limit."""
    try:
        return json.load(handle)
    except json.JSONDecodeError as exc:
        raise UnreadableJson(f"{where} is not valid JSON: {exc}") from None
    except UnicodeDecodeError as exc:
        raise UnreadableJson(f"{where} is not UTF-8 text: {exc.reason}") from None
    except ValueError:
        raise UnreadableJson(f"{where} holds a number of thousands of digits") from None
    except RecursionError:
        raise UnreadableJson(f"{where} nests deeper than any description does") from None


_UNSAFE_IN_FILE_NAMES = re.compile(r"[^A-Za-z0-9_.-]+")


def file_name(text: str) -> str:
    """A file or folder name standing for ``text`` (a run id, a table): readable, never
    ``.``/``..`` or hidden, and different for different texts: the readable part drops
    characters (``:`` and ``_`` both become ``_``), so a digest of the whole text follows."""
    readable = _UNSAFE_IN_FILE_NAMES.sub("_", text).lstrip(".")[:80]
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"{readable}-{digest}" if readable else digest
