"""Which DAG owns each file of the report directory: the DAG whose runs it shows.

The report view lets a user read a file only if Airflow lets them read every DAG that
owns it, so a grant on one DAG (one team's) does not open another DAG's pages. The
owners are decided here from the file's path alone, never from anything else a
request says (a query string names any DAG its sender likes).

    index.html, index-<n>.html        every DAG: they list their runs side by side
    generations/, generation_ts=*/,   cdc_generations: a generation's page, its GX
    table=*/                          Data Docs (per table under tablets)
    changes.html, changes/            cdc_changes: the changes page, row checks, Data Docs
    replication.html                  cdc_replication

Anything else has no owner and is refused to everyone: the records pages are rendered
from (``runs/``, ``replication/``), work files of running tasks (``summaries/``,
``changes-results/``), a validation the CLI wrote, whatever else lands in the folder.
A page added to the site gets a row here, or nobody can open it.
"""

from __future__ import annotations

import posixpath

from cdcgen.reports.checks_page import CHECKS_DIR
from cdcgen.reports.index_page import index_page_number
from cdcgen.reports.replication_page import REPLICATION
from cdcgen.reports.site import CHANGES, GENERATIONS_DIR, INDEX

#: The DAG ids of ``dags/`` (a test keeps the two in step: a renamed DAG would
#: otherwise lock every reader out of its reports).
GENERATIONS_DAG = "cdc_generations"
CHANGES_DAG = "cdc_changes"
REPLICATION_DAG = "cdc_replication"
EVERY_DAG = frozenset({GENERATIONS_DAG, CHANGES_DAG, REPLICATION_DAG})

#: Files at the top of the report directory, by name.
_TOP_FILES = {
    INDEX: EVERY_DAG,
    CHANGES: frozenset({CHANGES_DAG}),
    REPLICATION: frozenset({REPLICATION_DAG}),
}
#: Folders (the first part of a path), by name or by the prefix of their name.
_FOLDERS = {
    GENERATIONS_DIR: frozenset({GENERATIONS_DAG}),
    CHECKS_DIR: frozenset({CHANGES_DAG}),
}
#: A generation's Data Docs: ``cdcgen.generation_lake.lake_tables``'s PARTITION_PREFIX and
#: TABLE_PREFIX (a sibling layer: the test of this module keeps them in step).
_FOLDER_PREFIXES = {
    "generation_ts=": frozenset({GENERATIONS_DAG}),
    "table=": frozenset({GENERATIONS_DAG}),
}


def owners(path: str) -> frozenset[str] | None:
    """The DAGs that own the file ``path`` names, relative to the report directory
    (``""`` is the directory itself, served by its index); None if no DAG owns it.

    ``path`` is normalised first, so ``generations/../changes.html`` is the changes
    page, and a path that climbs out of the directory (or is absolute) has no owner."""
    normal = posixpath.normpath(path) if path else "."
    first, *rest = normal.split("/")
    if first in ("", ".."):  # absolute, or climbing out
        return None
    if first == ".":
        return EVERY_DAG
    if not rest and first in _TOP_FILES:
        return _TOP_FILES[first]
    if not rest and index_page_number(first) is not None:
        return EVERY_DAG  # the index's later pages
    if first in _FOLDERS:
        return _FOLDERS[first]
    for prefix, owner in _FOLDER_PREFIXES.items():
        if first.startswith(prefix) and first != prefix:
            return owner
    return None
