"""Names placed into CQL text: keyspaces, tables, columns.

CQL cannot bind a name as a value, so the only safe thing is to accept plain lowercase
identifiers and refuse everything else, by name. Keyspaces the pipeline writes to are
also kept out of the databases' own: ScyllaDB's and Cassandra's keyspaces are all
``system`` or ``system_*`` (``system_schema``, ``system_auth``, ``system_distributed``,
...), and a table created or a row written there is a change to the database itself.
"""

from __future__ import annotations

import re
from functools import lru_cache

from cdcgen.core.errors import InvalidName

_IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,47}")

#: Where ScyllaDB itself publishes CDC descriptions: the publisher may write its rows
#: there (never create tables), nothing else may.
SCYLLA_DISTRIBUTED = "system_distributed"
#: Where the changes pipeline's state lives when not in the target keyspace.
STATE_KEYSPACE_SETTING = "CDCGEN_STATE_KEYSPACE"


def check_identifier(name: str, what: str = "identifier") -> str:
    """Allow-list a keyspace/table name before it is placed into CQL text.

    ``fullmatch``, not ``^...$``: ``$`` also matches before a trailing newline.
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidName(
            f"invalid {what} {name!r}: use lowercase letters, digits and '_', "
            "starting with a letter, at most 48 characters"
        )
    return name


def is_system_keyspace(name: str) -> bool:
    """Whether the database owns the keyspace (``system`` or ``system_*``)."""
    return name == "system" or name.startswith("system_")


def check_writable_keyspace(
    name: str, what: str, *, allowed: frozenset[str] = frozenset(), setting: str = ""
) -> str:
    """An identifier that is not one of the database's own keyspaces, unless ``allowed``.

    ``setting`` names the option a user changes to fix it, so the error says so.
    """
    check_identifier(name, what)
    if is_system_keyspace(name) and name not in allowed:
        fix = f" (set {setting} to a keyspace of your own)" if setting else ""
        raise InvalidName(
            f"{what} {name!r} is a system keyspace of the database: "
            f"the pipeline does not write there{fix}"
        )
    return name


@lru_cache(maxsize=4096)
def quote(name: str) -> str:
    """A name as CQL text, double-quoted (so case and reserved words survive)."""
    return '"' + name.replace('"', '""') + '"'
