"""The documentation site's shape: every page under docs/ is in mkdocs.yml's nav, every nav
entry is a page, and every relative link of the README and the pages leads to a file and, with
a ``#fragment``, to a heading there. (`make lint` also builds the site with ``mkdocs build
--strict``, which checks the same on the rendered pages; this runs in milliseconds, without
MkDocs.)"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from tests.doc_pages import DOCS, HOME, README, REPO, docs_files, name, nav_pages, pages

_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.MULTILINE)


def _slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's ``toc`` (MkDocs) and GitHub both write it for
    the plain headings used here: markup and punctuation dropped, spaces to ``-``."""
    text = unicodedata.normalize("NFKD", heading.replace("`", "")).encode("ascii", "ignore")
    words = re.sub(r"[^\w\s-]", "", text.decode("ascii")).strip().lower()
    return re.sub(r"[-\s]+", "-", words)


def _prose(page: Path) -> str:
    """The page without its code: a link inside a code block or span is not a link."""
    return _CODE.sub("", _FENCE.sub("", page.read_text(encoding="utf-8")))


def _anchors(page: Path) -> set[str]:
    return {_slug(heading) for heading in _HEADING.findall(_prose(page))}


def _target(page: Path, link: str) -> Path:
    """The file a relative link of `page` leads to (docs/index.md is the README)."""
    target = (page.parent / link).resolve()
    if page == README:
        return target
    return README if target == (DOCS / HOME).resolve() else target


def test_every_docs_page_is_in_the_nav() -> None:
    nav = nav_pages()
    missing = [page for page in docs_files() if page not in nav]
    assert not missing, (
        f"docs pages not in mkdocs.yml's nav: {missing}; add a line for each under `nav:` "
        "(e.g. `      - guide/NAME.md` under `Guide:`)"
    )
    unknown = [page for page in nav if page != HOME and not (DOCS / page).is_file()]
    assert not unknown, f"mkdocs.yml's nav names pages that are not under docs/: {unknown}"
    assert len(nav) == len(set(nav)), "a page is in mkdocs.yml's nav twice"


def test_every_relative_link_leads_to_a_file_and_heading() -> None:
    broken = []
    for page in pages():
        for link in _LINK.findall(_prose(page)):
            if re.match(r"^[a-z]+:", link):  # https:, mailto:
                continue
            path, _, fragment = link.partition("#")
            target = _target(page, path) if path else page
            if not target.is_file():
                broken.append(f"{name(page)}: {link} (no file {target})")
            elif fragment and target.suffix == ".md" and fragment not in _anchors(target):
                broken.append(f"{name(page)}: {link} (no heading #{fragment} in {name(target)})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_readme_links_only_what_the_site_has() -> None:
    """The README is the site's home page too (scripts/mkdocs_readme.py rewrites `docs/X` to
    `X` and ARCHITECTURE.md to its page): a link to anything else would break there."""
    outside = [
        link
        for link in _LINK.findall(_prose(README))
        if not re.match(r"^([a-z]+:|#|docs/|ARCHITECTURE\.md$)", link)
    ]
    assert not outside, f"README.md links outside docs/ that the site cannot follow: {outside}"
    assert (REPO / "ARCHITECTURE.md").is_file() and (DOCS / "architecture.md").is_file()
