"""The README and the docs/ pages hold together: every relative link reaches a file (and, with `#anchor`, a heading
of that page), every page is listed in docs/index.md and in mkdocs.yml's nav, and the README stays short."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
README_LIMIT = 24_000  # bytes: a README a newcomer reads in five minutes; the reference is in docs/

FENCE = re.compile(r"^```.*?^```[ \t]*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def prose(text: str) -> str:
    """The text with code blocks and code spans taken out: what looks like a link there is not one."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(prose(page.read_text())) if not EXTERNAL.match(target)]


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and mkdocs make it (for the headings these pages use, they agree)."""
    text = CODE_SPAN.sub(lambda span: span.group()[1:-1], heading).strip().lower()
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text))


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, leads nowhere; None when it leads somewhere."""
    path, _, anchor = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    if not file.exists():
        return f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"
    if page.parent == DOCS and not file.is_relative_to(DOCS):
        return f"{target}: outside docs/, so the site (mkdocs --strict) cannot link it"
    if anchor and file.suffix == ".md" and anchor not in anchors(file):
        return f"{target}: no heading #{anchor} in {file.name}"
    return None


@pytest.mark.parametrize("page", [ROOT / "README.md", *PAGES], ids=lambda page: page.name)
def test_every_relative_link_leads_to_a_file_and_a_heading(page: Path) -> None:
    assert [why for target in links(page) if (why := broken(page, target))] == []


def test_a_broken_link_and_a_missing_heading_are_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## A section\n\n[ok](#a-section) [gone](missing.md) [nowhere](#no-such)\n")
    assert [why for target in links(page) if (why := broken(page, target))] == [
        f"missing.md: no file {tmp_path / 'missing.md'}",
        "#no-such: no heading #no-such in page.md",
    ]


def test_every_page_is_in_the_index_and_in_the_sites_nav() -> None:
    indexed = {target.partition("#")[0] for target in links(DOCS / "index.md")}
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    in_nav = set(re.findall(r"[\w.-]+\.md", str(config["nav"])))
    pages = {page.name for page in PAGES}
    assert pages - {"index.md"} - indexed == set()
    assert (pages - in_nav, in_nav - pages) == (set(), set())


def test_the_readme_stays_short() -> None:
    assert (ROOT / "README.md").stat().st_size < README_LIMIT
