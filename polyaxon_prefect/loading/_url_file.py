"""A Polyaxonfile read from a URL (``run --url``): fetched with `urlRef`'s limits and errors,
named by its URL in every problem.

A ``pathRef`` in such a file is relative to the URL and fetched from there (`_Loader.resolve_refs`
treats a ``str`` base as a URL), like a ``pathRef`` inside a ``urlRef`` component. Polyaxon 2.x's
CLI keeps no path context for ``--url`` and would read it from the current directory; a remote
file naming its own neighbours is what its author meant, and it never reads this machine's disk.
"""

from __future__ import annotations

import os
from pathlib import Path

from polyaxon_prefect._source import Document
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.loading._refs import fetch_url_text
from polyaxon_prefect.loading._yaml import parse_yaml

__all__ = ["read_url_document", "source_of"]


def source_of(path: str | os.PathLike[str]) -> Path | str:
    """Where a file is read from: a ``str`` with a ``scheme://`` is a URL (kept as a ``str``: a
    `Path` would fold its ``//``; a scheme other than http, https or file is refused when
    fetched, by name), anything else a local path."""
    if isinstance(path, str) and "://" in path:
        return path
    return Path(path)


def read_url_document(url: str, timeout: float | None) -> Document:
    """The YAML document at ``url``; `PolyaxonfileError` (one problem at the URL) if it
    cannot be fetched."""
    try:
        text = fetch_url_text(url, timeout=timeout)
    except ValueError as exc:
        raise PolyaxonfileError(
            [
                Problem(
                    f"the Polyaxonfile at `{url}` could not be fetched: {exc}",
                    rule="url",
                    file=url,
                    value=url,
                    hint="check the URL and your network, or download the file and use -f",
                )
            ]
        ) from None
    return parse_yaml(text, file=url)
