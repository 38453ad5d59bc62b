"""The README is the front door: short, and every manual in docs/ is linked from it, so
nothing moved out of it is lost."""

from __future__ import annotations

import re

from cdcgen_dev.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
#: The front door's size limit: a page a reader reads, the manuals are in docs/.
LIMIT_BYTES = 15_000


def test_the_readme_is_short() -> None:
    assert len(README.read_bytes()) < LIMIT_BYTES


def test_every_manual_is_linked_from_the_readme_and_every_link_leads_somewhere() -> None:
    links = set(re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text()))
    local = {link for link in links if "://" not in link}
    assert [link for link in sorted(local) if not (REPO_ROOT / link).exists()] == []
    manuals = {f"docs/{path.name}" for path in (REPO_ROOT / "docs").glob("*.md")}
    assert sorted(manuals - local) == []
    for name in ("LICENSE", "CHANGELOG.md"):
        assert name in local and (REPO_ROOT / name).is_file()
