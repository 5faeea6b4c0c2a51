"""The documentation's pages in reading order, for the tests that run and check them.

README.md comes first (it is also the site's home page, ``index.md``: see
``scripts/mkdocs_readme.py``), then the pages of ``mkdocs.yml``'s nav in its order, then any
page under ``docs/`` the nav does not list (sorted): `tests/unit/test_docs.py` fails on those,
but their command blocks still run, so a page added without its nav line is still tested.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MKDOCS = REPO / "mkdocs.yml"
HOME = "index.md"
"""The nav's name of README.md on the site."""


def nav_pages() -> list[str]:
    """The nav's pages (paths under docs/), in its order."""
    config = yaml.safe_load(MKDOCS.read_text(encoding="utf-8"))
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, str):
            if node.endswith(".md") and "://" not in node:
                found.append(node)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for item in node.values():
                walk(item)

    walk(config["nav"])
    return found


def docs_files() -> list[str]:
    """Every Markdown page under docs/ (paths under docs/), sorted."""
    return sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))


def pages() -> list[Path]:
    """README.md, then every page under docs/: the nav's in its order, then the others."""
    nav = nav_pages()
    listed = [DOCS / page for page in nav if page != HOME]
    unlisted = [DOCS / page for page in docs_files() if page not in nav]
    return [README, *listed, *unlisted]


def name(page: Path) -> str:
    """The page's path from the repository root, as messages name it."""
    return page.relative_to(REPO).as_posix()
