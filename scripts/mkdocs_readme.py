"""MkDocs hook: README.md is the site's home page (``index.md``).

The README's set-up and tour are written once and read on GitHub and on the site alike: its
links into ``docs/`` are made relative to the site, and ``ARCHITECTURE.md`` is the site's
``architecture.md`` page (which includes that file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).parents[1] / "README.md"


def home_page(readme: str) -> str:
    """The README with its links written for a page at the site's root."""
    return readme.replace("](docs/", "](").replace("](ARCHITECTURE.md)", "](architecture.md)")


def on_files(files: Files, config: Any) -> Files:
    files.append(
        File.generated(config, "index.md", content=home_page(README.read_text(encoding="utf-8")))
    )
    return files
