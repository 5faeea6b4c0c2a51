"""Resolving an operation's component reference: ``pathRef``, ``urlRef``, ``hubRef``, ``dagRef``.

Polyaxon's CLI fetches path and URL refs itself and asks its server for hub refs. We have no hub
server, so a hub ref is a file in a local hub directory: the ones the caller passes, then those in
``POLYAXON_PREFECT_HUB`` (``os.pathsep``-separated), then the small hub shipped in this package.

Every failure is a `PolyaxonfileError` located at the op's ref key (``pathRef`` ...), with a hint,
because "file not found" without saying which file looked where is the usual dead end here.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from polyaxon_prefect._source import (
    URL_MAX_BYTES,
    URL_TIMEOUT,
    Positions,
    SourceError,
    parse_yaml,
    read_source,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem

__all__ = [
    "BUILTIN_HUB",
    "HUB_ENV_VAR",
    "REF_KEYS",
    "ComponentSource",
    "fetch_url_text",
    "hub_dirs_from_env",
    "ignored_references",
    "parse_hub_ref",
    "resolve_reference",
]

REF_KEYS = ("hubRef", "dagRef", "urlRef", "pathRef")
HUB_ENV_VAR = "POLYAXON_PREFECT_HUB"
BUILTIN_HUB = Path(__file__).resolve().parent.parent / "hub"

_SLUG = r"[A-Za-z0-9_][\w.-]*"  # no leading dot: a ref can never climb out of a hub directory
_HUB_REF = re.compile(rf"^(?:(?P<owner>{_SLUG})/)?(?P<name>{_SLUG})(?::(?P<tag>{_SLUG}))?$")
_YAML_SUFFIXES = (".yaml", ".yml")
_CHUNK = 64 * 1024
_WORD = re.compile(r"[A-Za-z][\w-]{0,39}")


@dataclass
class ComponentSource:
    """A referenced component's data, where it came from, and its source positions.

    ``positions`` is None for a ``dagRef``: the component lives in the referencing file, whose
    positions the caller already has.
    """

    data: dict[str, Any]
    positions: Positions | None
    file: str | None


def _fail(
    message: str,
    key: str,
    *,
    at: tuple[str | int, ...],
    file: str | None,
    hint: str | None = None,
    rule: str = "component_ref",
    value: object = None,
) -> PolyaxonfileError:
    return PolyaxonfileError(
        [Problem(message, rule=rule, path=(*at, key), file=file, hint=hint, value=value)]
    )


def _component_from_text(
    text: str, source: str, key: str, *, at: tuple[str | int, ...], file: str | None
) -> ComponentSource:
    document = parse_yaml(text, file=source)  # YAML errors point into the referenced file
    data = document.data
    if not isinstance(data, dict):
        hint = None
        if isinstance(data, str) and data.lstrip().lower().startswith(("<!doctype", "<html")):
            hint = "this looks like a web page; link to the raw file instead"
        raise _fail(
            f"{key} `{source}` does not hold a component: expected a YAML mapping, "
            f"got {type(data).__name__}",
            key,
            at=at,
            file=file,
            hint=hint or "a referenced file must contain one `kind: component` document",
        )
    kind = data.get("kind")
    if kind is None and "run" not in data:
        # Not a component at all (a config file, `/etc/passwd`...): one line, and none of its
        # keys, which the component's "unknown key" problems would print one by one.
        raise _fail(
            f"{key} `{source}` does not hold a component: it has neither `kind: component` nor "
            "a `run` section",
            key,
            at=at,
            file=file,
            hint="reference the component file that the operation runs",
        )
    if kind != "component" and kind is not None:
        shown = f"`kind: {kind}`" if isinstance(kind, str) and _WORD.fullmatch(kind) else "a kind"
        raise _fail(
            f"{key} `{source}` must point to a component, but the file has {shown}",
            key,
            at=at,
            file=file,
            hint="reference the component file that the operation runs",
        )
    return ComponentSource(data=data, positions=document.positions, file=source)


def _read_file(
    path: Path, key: str, *, at: tuple[str | int, ...], file: str | None, label: str
) -> ComponentSource:
    try:
        text = read_source(path)
    except SourceError as exc:
        raise _fail(f"{label} {exc.message}", key, at=at, file=file, hint=exc.hint) from None
    try:
        return _component_from_text(text, str(path), key, at=at, file=file)
    except PolyaxonfileError as error:
        if (
            path.suffix.lower() in (*_YAML_SUFFIXES, ".json")
            or error.problems[0].rule == "component_ref"
        ):
            raise
        # A YAML error in a file that is not named as YAML: its problem would quote the file's
        # lines (a key, a value); say only that it is no component.
        raise _fail(
            f"{label} `{path}` does not hold a component: it is not YAML",
            key,
            at=at,
            file=file,
            hint="reference the component's .yaml file",
        ) from None


# --------------------------------------------------------------------------------------------------
# pathRef


def _resolve_path(
    ref: str, base_dir: Path, *, at: tuple[str | int, ...], file: str | None
) -> ComponentSource:
    path = Path(ref).expanduser()
    resolved = path if path.is_absolute() else Path(base_dir) / path
    where = f" (referenced from `{file}`)" if file else ""
    if not resolved.exists():
        raise _fail(
            f"pathRef `{ref}` resolves to `{resolved}`, which does not exist{where}",
            "pathRef",
            at=at,
            file=file,
            hint="a pathRef is relative to the directory of the file that contains it",
            value=ref,
        )
    if resolved.is_dir():
        raise _fail(
            f"pathRef `{ref}` resolves to `{resolved}`, which is a directory{where}",
            "pathRef",
            at=at,
            file=file,
            hint="point pathRef at the component's .yaml file",
            value=ref,
        )
    return _read_file(resolved, "pathRef", at=at, file=file, label="pathRef")


# --------------------------------------------------------------------------------------------------
# urlRef


def _fetch(url: str, *, timeout: float, max_bytes: int) -> tuple[bytes, str | None]:
    """Download at most ``max_bytes`` within ``timeout`` seconds overall; raise `ValueError`.

    The deadline is enforced from outside the download: a socket timeout only bounds each
    read, and a server sending one byte every few seconds never trips it. The download runs
    in a daemon thread that is abandoned at the deadline (its reads stay bounded by the byte
    limit and the socket timeout).
    """
    box: dict[str, Any] = {}

    def download() -> None:
        try:
            box["result"] = _download(url, timeout=timeout, max_bytes=max_bytes)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=download, name="urlref-fetch", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise ValueError(f"the download took longer than {timeout:g}s")
    if "error" in box:
        raise box["error"]
    result: tuple[bytes, str | None] = box["result"]
    return result


def _download(url: str, *, timeout: float, max_bytes: int) -> tuple[bytes, str | None]:
    # imported here: `urllib.request` (with `http.client`) would add to every `check`'s
    # start-up, and only a URL ref needs it
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout
    try:
        response = urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        raise ValueError(f"the server answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise ValueError(f"no answer within {timeout:g}s") from None
        if isinstance(reason, OSError) and reason.strerror:
            reason = reason.strerror
        host = urllib.parse.urlsplit(url).netloc or url
        raise ValueError(f"cannot reach `{host}`: {reason}") from None
    except TimeoutError:
        raise ValueError(f"no answer within {timeout:g}s") from None
    except OSError as exc:
        raise ValueError(f"cannot open it: {exc.strerror or exc}") from None
    with response:
        length = response.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > max_bytes:
            raise ValueError(f"it is {int(length)} bytes, more than the {max_bytes}-byte limit")
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise ValueError(f"the download took longer than {timeout:g}s")
            try:
                chunk = response.read1(_CHUNK)
            except TimeoutError:
                raise ValueError(f"the download stalled for more than {timeout:g}s") from None
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise ValueError(f"it is larger than the {max_bytes}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks), response.headers.get("Content-Type")


URL_SCHEMES = ("http", "https", "file")


def fetch_url_text(url: str, *, timeout: float | None = None, max_bytes: int | None = None) -> str:
    """The text at ``url`` (http, https or file), fetched with `urlRef`'s limits: the byte
    limit and the overall deadline of `_fetch` (defaults: `URL_MAX_BYTES`, `URL_TIMEOUT`).

    Raises `ValueError` with the reason in words (an unsupported scheme, the server's answer,
    a timeout, too large, not UTF-8), for the caller to locate: `urlRef` at the op's key,
    ``run --url`` at the flag."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise ValueError(
            f"unsupported scheme `{scheme or '(none)'}` (use an http(s):// or file:// URL)"
        )
    seconds = timeout if timeout is not None else float(URL_TIMEOUT.value)
    limit = max_bytes if max_bytes is not None else URL_MAX_BYTES.value
    body, content_type = _fetch(url, timeout=seconds, max_bytes=limit)
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"it did not return UTF-8 text (content type {content_type or 'unknown'})"
        ) from None


def _resolve_url(
    url: str,
    *,
    timeout: float,
    max_bytes: int,
    at: tuple[str | int, ...],
    file: str | None,
) -> ComponentSource:
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise _fail(
            f"urlRef `{url}` has an unsupported scheme `{scheme or '(none)'}`",
            "urlRef",
            at=at,
            file=file,
            hint="use an http(s):// or file:// URL, or a pathRef for a local file",
            value=url,
        )
    try:
        body, content_type = _fetch(url, timeout=timeout, max_bytes=max_bytes)
    except ValueError as exc:
        raise _fail(
            f"urlRef `{url}` could not be fetched: {exc}",
            "urlRef",
            at=at,
            file=file,
            hint="check the URL and your network, or download the file and use a pathRef",
            value=url,
        ) from None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(
            f"urlRef `{url}` did not return UTF-8 text (content type {content_type or 'unknown'})",
            "urlRef",
            at=at,
            file=file,
            hint="the URL must serve the component's YAML file itself",
            value=url,
        ) from None
    return _component_from_text(text, url, "urlRef", at=at, file=file)


# --------------------------------------------------------------------------------------------------
# hubRef


def parse_hub_ref(ref: str) -> tuple[str | None, str, str | None]:
    """Split ``[owner/]name[:tag]``; raise `ValueError` on anything else."""
    match = _HUB_REF.match(ref.strip()) if isinstance(ref, str) else None
    if match is None:
        raise ValueError(f"hubRef {ref!r} is not of the form `[owner/]name[:tag]`")
    return match["owner"], match["name"], match["tag"]


def hub_dirs_from_env(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The directories listed in ``POLYAXON_PREFECT_HUB``."""
    value = (os.environ if environ is None else environ).get(HUB_ENV_VAR, "")
    return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]


def _hub_candidates(directory: Path, owner: str | None, name: str, tag: str | None) -> list[Path]:
    roots = ([directory / owner] if owner else []) + [directory]
    out: list[Path] = []
    for root in roots:
        for suffix in _YAML_SUFFIXES:
            if tag is None or tag == "latest":
                out.append(root / f"{name}{suffix}")
            if tag is not None:
                out.append(root / f"{name}-{tag}{suffix}")
            out.append(root / name / f"{tag or 'latest'}{suffix}")
    return out


def _hub_names(directory: Path) -> list[str]:
    if not directory.is_dir():
        return []
    names: list[str] = []
    for entry in sorted(directory.iterdir()):
        if entry.is_file() and entry.suffix in _YAML_SUFFIXES:
            names.append(entry.stem)
        elif entry.is_dir():
            names += [
                f"{entry.name}:{sub.stem}"
                for sub in sorted(entry.iterdir())
                if sub.is_file() and sub.suffix in _YAML_SUFFIXES
            ]
    return names


def _resolve_hub(
    ref: str, hub_dirs: Sequence[Path], *, at: tuple[str | int, ...], file: str | None
) -> ComponentSource:
    try:
        owner, name, tag = parse_hub_ref(ref)
    except ValueError as exc:
        raise _fail(
            str(exc),
            "hubRef",
            at=at,
            file=file,
            hint="e.g. `kaniko`, `tensorboard:latest` or `acme/trainer:v2`",
            value=ref,
        ) from None
    directories = [*(Path(d) for d in hub_dirs), *hub_dirs_from_env(), BUILTIN_HUB]
    for directory in directories:
        for candidate in _hub_candidates(directory, owner, name, tag):
            if candidate.is_file():
                return _read_file(candidate, "hubRef", at=at, file=file, label="hubRef")

    available = sorted({n for d in directories for n in _hub_names(d)})
    close = difflib.get_close_matches(name, available, n=3, cutoff=0.6)
    looked = ", ".join(f"`{d}`" for d in directories)
    message = f"hubRef `{ref}` was not found in any hub directory (looked in {looked})"
    if available:
        message += f"; available: {', '.join(available)}"
    hint = (
        f"did you mean {' or '.join(f'`{c}`' for c in close)}?"
        if close
        else f"add `{name}.yaml` to a hub directory (pass one, or list it in {HUB_ENV_VAR})"
    )
    raise _fail(message, "hubRef", at=at, file=file, hint=hint, value=ref)


# --------------------------------------------------------------------------------------------------
# dagRef


def _resolve_dag(
    ref: str,
    dag_components: Mapping[str, dict[str, Any]] | None,
    op_name: object,
    *,
    at: tuple[str | int, ...],
    file: str | None,
) -> ComponentSource:
    if dag_components is None:
        raise _fail(
            f"dagRef `{ref}` can only be used by an operation inside a DAG",
            "dagRef",
            at=at,
            file=file,
            hint="use pathRef, urlRef, hubRef or an inline component here",
            value=ref,
        )
    if ref not in dag_components:
        names = sorted(dag_components)
        close = difflib.get_close_matches(str(ref), names, n=3, cutoff=0.6)
        who = f"op `{op_name}`" if op_name else "this op"
        message = (
            f"{who} requires a component named `{ref}`, which is not defined in the DAG's "
            f"components (defined: {', '.join(names) or 'none'})"
        )
        hint = (
            f"did you mean {' or '.join(f'`{c}`' for c in close)}?"
            if close
            else "add the component under `run.components` with that name"
        )
        raise _fail(message, "dagRef", at=at, file=file, hint=hint, rule="dag_ref", value=ref)
    return ComponentSource(data=copy.deepcopy(dict(dag_components[ref])), positions=None, file=None)


# --------------------------------------------------------------------------------------------------


def ignored_references(op: Mapping[str, Any]) -> list[str]:
    """The reference keys an inline ``component`` overrides (``["hubRef"]``), else ``[]``."""
    if op.get("component") is None:
        return []
    return [key for key in REF_KEYS if op.get(key) is not None]


def resolve_reference(
    op: Mapping[str, Any],
    *,
    base_dir: Path,
    hub_dirs: Sequence[Path] = (),
    dag_components: Mapping[str, dict[str, Any]] | None = None,
    url_timeout: float | None = None,
    url_max_bytes: int | None = None,
    file: str | None = None,
    at: tuple[str | int, ...] = (),
) -> ComponentSource | None:
    """Load the component an operation references, or None if it has no reference key.

    ``base_dir`` is the directory of the referencing file (``pathRef`` is relative to it);
    ``file`` names that file in messages; ``at`` is where the op sits in it (for an op inside a
    DAG, e.g. ``("run", "operations", 2)``), prefixed to the reported ``("pathRef",)`` path.
    An inline ``component`` is the caller's business: with no ref key this returns None, and with
    one it returns None too, because the inline component wins (Polyaxon stores and exports
    operations with both; the reference is not fetched, see `ignored_references`).
    """
    present = [key for key in REF_KEYS if op.get(key) is not None]
    if not present or op.get("component") is not None:
        return None
    if len(present) > 1:
        raise _fail(
            f"an operation needs exactly one component reference, got "
            f"{', '.join(f'`{k}`' for k in present)}",
            present[-1],
            at=at,
            file=file,
            hint="keep one of hubRef, dagRef, urlRef, pathRef or an inline component",
            rule="one_reference",
        )
    key = present[0]
    ref = op[key]
    if not isinstance(ref, str) or not ref.strip():
        raise _fail(
            f"{key} must be a non-empty string, got {ref!r}", key, at=at, file=file, value=ref
        )
    if key == "pathRef":
        return _resolve_path(ref, Path(base_dir), at=at, file=file)
    if key == "urlRef":
        timeout = url_timeout if url_timeout is not None else float(URL_TIMEOUT.value)
        max_bytes = url_max_bytes if url_max_bytes is not None else URL_MAX_BYTES.value
        return _resolve_url(ref, timeout=timeout, max_bytes=max_bytes, at=at, file=file)
    if key == "hubRef":
        return _resolve_hub(ref, hub_dirs, at=at, file=file)
    return _resolve_dag(ref, dag_components, op.get("name"), at=at, file=file)
