"""Masking of what people see: secret values and URL credentials, deep inside any value.

Masking is a view, never a transformation of data. The values a job produced (its outputs,
its metrics) travel between ops, into refs and conditions, unchanged; only what is shown or
stored *for people* (the terminal, logs, artifacts, ``--json`` results, error and state
messages) goes through `mask_value`. Masking a value passed downstream would make a
downstream op receive ``***`` instead of the upstream's output.

Two things are masked:

* secret values: the values of connection secrets (and the credentials of git URLs), given
  explicitly or remembered by `remember_secrets` when a job is prepared in this process, so a
  caller far from the job (the CLI printing a DAG's result) can still mask them;
* the userinfo of any URL (``https://user:TOKEN@host/repo`` -> ``https://***@host/repo``),
  wherever it appears, whether or not its credentials were declared secret.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import unquote

from polyaxon_prefect.runtime.session._process import replace_secrets, usable_secrets

__all__ = [
    "known_secrets",
    "mask_text",
    "mask_value",
    "redact_url_credentials",
    "remember_secrets",
    "text_masker",
    "url_credentials",
    "with_url_credentials",
]

_MASK = "***"
# scheme://userinfo@ : userinfo has no '/', '@' or whitespace (RFC 3986 allows ':' in it)
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/@\s]+)@")

_lock = threading.Lock()
_known: set[str] = set()


def redact_url_credentials(text: str) -> str:
    """``https://user:TOKEN@host/x`` -> ``https://***@host/x`` for every URL in ``text``.

    The user name goes too: a token is often the user part alone (``https://TOKEN@host``).
    """
    if "@" not in text or "://" not in text:
        return text
    return _URL_USERINFO.sub(lambda match: f"{match['scheme']}{_MASK}@", text)


def url_credentials(url: str) -> list[str]:
    """The secret parts of a URL's userinfo (raw and percent-decoded), to mask wherever they
    appear on their own: the password, or for http(s) a user name without a password (a
    token given as the user, as GitHub accepts). An ssh user (``ssh://git@host``) is not one."""
    match = _URL_USERINFO.search(url)
    if match is None:
        return []
    userinfo = match["userinfo"]
    user, has_password, password = userinfo.partition(":")
    if has_password:
        secret = password
    elif match["scheme"].lower() in ("http://", "https://"):
        secret = user
    else:
        return []
    return [v for v in dict.fromkeys((userinfo, secret, unquote(secret))) if v]


def remember_secrets(secrets: Iterable[str]) -> None:
    """Add ``secrets`` to the values `mask_value` masks in this process from now on."""
    values = [s for s in secrets if s]
    if values:
        with _lock:
            _known.update(values)


def known_secrets() -> tuple[str, ...]:
    """Every secret value remembered in this process."""
    with _lock:
        return tuple(_known)


def mask_text(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with URL credentials redacted and every secret (given or remembered) masked."""
    return text_masker(secrets)(text)


def text_masker(secrets: Sequence[str] = ()) -> Callable[[str], str]:
    """`mask_text` with the secrets known now, gathered and sorted once: what masks the many
    strings of one report (a DAG's thousands of ops) in one pass."""
    usable = usable_secrets([*secrets, *known_secrets()])
    if not usable:
        return redact_url_credentials

    def mask(text: str) -> str:
        return redact_url_credentials(replace_secrets(text, usable))

    return mask


def mask_value(value: object, secrets: Sequence[str] = ()) -> Any:
    """A copy of ``value`` to show or store for people: every string inside it (dict keys
    included, at any depth) masked by `mask_text`; numbers, booleans and ``None`` unchanged.
    Tuples and sets come back as lists (what JSON would make of them), a dataclass as the dict
    of its fields."""
    return _mask(value, text_masker(secrets))


def _mask(value: object, mask: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, Mapping):
        return {mask(k) if isinstance(k, str) else k: _mask(v, mask) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_mask(item, mask) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _mask(dataclasses.asdict(value), mask)
    return value


def with_url_credentials(secrets: tuple[str, ...], *values: object) -> tuple[str, ...]:
    """``secrets`` plus the credentials written into any URL inside ``values`` (a git init
    step's, a connection's, a param's): secrets too, masked wherever they appear."""
    found: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            if "://" in value and "@" in value:
                found.extend(url_credentials(value))
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(values)
    return tuple(dict.fromkeys([*secrets, *found]))
