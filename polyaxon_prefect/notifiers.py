"""What a notifier op's process runs: ``python -m polyaxon_prefect.notifiers KIND``.

Polyaxon's notifier hub components (``webhook``, ``slack``, ``discord``, ``mattermost``) run an
image that posts a run's end to a URL taken from the hook's connection; ours run this module in
a local process, which does the same with the standard library. The URL comes from the
connection the hook names, as the connection runtime exposes it: its ``schema.url``
(``POLYAXON_PREFECT_CONNECTION_<N>_URL``), or Polyaxon's secret layout
(``POLYAXON_INTEGRATIONS_WEBHOOKS_<KIND>``: a JSON list of ``{url}``, or one URL). The message
is what the hook passed: the run's ``uuid``, ``kind``, ``name``, ``status``, ``condition``,
``inputs`` and ``outputs`` (`polyaxon_prefect.tracking.get_params`).

Standard library only, like `polyaxon_prefect.tracking`: no Prefect, no third-party client.
The URL is never printed whole (it is usually the secret); a failed POST fails the op.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["KINDS", "main", "message_text", "payload", "urls_from_env"]

_TIMEOUT_SECONDS = 10.0


def message_text(params: Mapping[str, Any]) -> str:
    """One line for a chat: ``Polyaxon run `train` (kind job, uuid ...) succeeded``."""
    name = params.get("name") or "run"
    status = params.get("status") or "done"
    text = (
        f"Polyaxon run `{name}` ({params.get('kind') or 'op'}, uuid {params.get('uuid')}) {status}"
    )
    condition = params.get("condition") or {}
    message = condition.get("message") if isinstance(condition, Mapping) else None
    if message and status != "succeeded":
        text += f": {message}"
    outputs = params.get("outputs") or {}
    if isinstance(outputs, Mapping) and outputs:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(outputs.items()))
        text += f"; outputs: {shown}"
    return text


KINDS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "webhook": lambda params: {**params, "text": message_text(params)},
    "slack": lambda params: {"text": message_text(params)},
    "mattermost": lambda params: {"text": message_text(params)},
    "discord": lambda params: {"content": message_text(params)},
}
"""The body each notifier kind posts (a webhook gets every field plus the text)."""


def payload(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return KINDS[kind](params)


def _urls(value: str) -> list[str]:
    value = value.strip()
    if not value:
        return []
    if value.startswith(("[", "{")):
        try:
            data = json.loads(value)
        except ValueError:
            return []
        items = data if isinstance(data, list) else [data]
        return [str(item["url"]) for item in items if isinstance(item, dict) and item.get("url")]
    return [value]


def urls_from_env(kind: str, env: Mapping[str, str]) -> list[str]:
    """Every URL the op's connections give: Polyaxon's ``POLYAXON_INTEGRATIONS_WEBHOOKS_<KIND>``
    first, then each connection's ``..._URL``."""
    found = _urls(env.get(f"POLYAXON_INTEGRATIONS_WEBHOOKS_{kind.upper()}", ""))
    for name in sorted(env):
        if name.startswith("POLYAXON_PREFECT_CONNECTION_") and name.endswith("_URL"):
            found += _urls(env[name])
    return list(dict.fromkeys(found))


def _where(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or '?'}" + (f":{parts.port}" if parts.port else "")


def post(url: str, body: Mapping[str, Any]) -> int:
    """POST ``body`` as JSON; the HTTP status (raises on a network error or a 4xx/5xx)."""
    data = json.dumps(body, default=str).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=_TIMEOUT_SECONDS) as response:
        return int(response.status)


def main(argv: Sequence[str] | None = None) -> int:
    from polyaxon_prefect.tracking import get_params

    args = list(sys.argv[1:] if argv is None else argv)
    kind = args[0] if args else "webhook"
    if kind not in KINDS:
        print(f"unknown notifier `{kind}`; one of {', '.join(sorted(KINDS))}", file=sys.stderr)
        return 2
    urls = urls_from_env(kind, os.environ)
    if not urls:
        print(
            f"the {kind} notifier has no URL: give the hook a `connection` whose schema has a "
            f"`url`, or a secret with POLYAXON_INTEGRATIONS_WEBHOOKS_{kind.upper()}",
            file=sys.stderr,
        )
        return 1
    body = payload(kind, get_params())
    failed = 0
    for url in urls:
        try:
            status = post(url, body)
            print(f"notified {_where(url)} (HTTP {status})", flush=True)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "code", None) or getattr(exc, "reason", None) or exc
            print(f"could not notify {_where(url)}: {reason}", file=sys.stderr, flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
