"""Names placed into CQL text: keyspaces, tables, columns.

CQL cannot bind a name as a value, so the only safe thing is to accept plain lowercase
identifiers and refuse everything else, by name.
"""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


def check_identifier(name: str, what: str = "identifier") -> str:
    """Allow-list a keyspace/table name before it is placed into CQL text.

    Names cannot be bound as values in CQL, so the only safe thing is to accept
    plain lowercase identifiers and refuse everything else by name.
    """
    if not _IDENTIFIER.match(name):
        raise ValueError(
            f"invalid {what} {name!r}: use lowercase letters, digits and '_', "
            "starting with a letter, at most 48 characters"
        )
    return name
