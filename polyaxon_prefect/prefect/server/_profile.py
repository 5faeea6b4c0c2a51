"""``server start --set-profile`` without importing Prefect (about 2 CPU s saved): the API URL
written into the active profile of Prefect's profiles file (TOML), byte for byte as
``prefect config set PREFECT_API_URL=...`` (Prefect's ``update_current_profile``) writes it.

Only where that result is certain without Prefect's settings model: the profiles file absent,
or holding nothing but the settings of Prefect's own template profiles and API URLs; no
``PREFECT_PROFILES_PATH`` and no settings file Prefect would read in the working folder. In
any other case `write_api_url` returns False and the caller asks Prefect itself.
"""

from __future__ import annotations

import importlib.util
import os
import re
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["write_api_url"]

API_URL = "PREFECT_API_URL"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_PLAIN_TEXT = re.compile(r"[ !#-\[\]-~]*")  # printable ASCII but `"` and `\`: TOML as written


def write_api_url(api_url: str) -> bool:
    """Point the active Prefect profile at ``api_url``, as ``prefect config set`` does; False
    (nothing written) when the result is not certain without Prefect."""
    path = _profiles_path()
    template = _template()
    if path is None or template is None or _PLAIN_TEXT.fullmatch(api_url) is None:
        return False
    try:
        defaults = tomllib.loads(template.read_text(encoding="utf-8"))
        user = tomllib.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    text = _written(defaults, user, api_url)
    if text is None:
        return False
    _write(path, text)
    return True


def _profiles_path() -> Path | None:
    if "PREFECT_PROFILES_PATH" in os.environ:
        return None
    if not _no_settings_here():
        return None
    home = os.environ.get("PREFECT_HOME") or "~/.prefect"
    return Path(home).expanduser() / "profiles.toml"


def _no_settings_here() -> bool:
    """Whether the working folder has no settings for Prefect (its home or profiles path may be
    one): no ``prefect.toml``, no ``PREFECT_`` line in ``.env``, no ``[tool.prefect]`` in
    ``pyproject.toml`` (a project's own is common: without that table Prefect ignores it)."""
    if Path("prefect.toml").exists():
        return False
    try:
        if "PREFECT_" in Path(".env").read_text(encoding="utf-8"):
            return False
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        return False
    try:
        pyproject = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return True
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    tool = pyproject.get("tool")
    return not (isinstance(tool, dict) and "prefect" in tool)


def _template() -> Path | None:
    """Prefect's template of profiles (its defaults), found without importing Prefect."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations)), "settings", "profiles.toml")
    return path if path.is_file() else None


def _profiles(data: dict[str, Any]) -> dict[str, dict[str, str]] | None:
    """A profiles file's profiles, None unless each is a table of text settings."""
    if set(data) - {"active", "profiles"}:
        return None  # Prefect drops any other key when it writes: not ours to decide
    profiles = data.get("profiles", {})
    if not isinstance(profiles, dict):
        return None
    for name, settings in profiles.items():
        if _BARE_KEY.fullmatch(name) is None or not isinstance(settings, dict):
            return None
        for value in settings.values():
            if not isinstance(value, str) or _PLAIN_TEXT.fullmatch(value) is None:
                return None
    return profiles


def _written(defaults: dict[str, Any], user: dict[str, Any], api_url: str) -> str | None:
    """The profiles file Prefect would write, or None where only Prefect can say."""
    templates, profiles = _profiles(defaults), _profiles(user)
    if templates is None or profiles is None:
        return None
    # settings whose names Prefect takes as they are (no legacy alias to rename)
    known = {key for settings in templates.values() for key in settings} | {API_URL}
    if any(key not in known for settings in profiles.values() for key in settings):
        return None
    # `load_profiles`: the template's profiles, each merged with the file's of that name
    merged = {name: dict(settings) for name, settings in templates.items()}
    kept = []  # the profiles the file gives: the ones written back, in the template's order
    for name, settings in profiles.items():
        merged[name] = {**merged.get(name, {}), **settings}
        kept.append(name)
    active = user.get("active") or defaults.get("active")
    chosen = os.environ.get("PREFECT_PROFILE", active)
    if not isinstance(active, str) or active not in merged or chosen not in merged:
        return None  # Prefect would warn and fall back on another profile
    merged[chosen][API_URL] = api_url
    kept.append(chosen)
    sections = [
        f"[profiles.{name}]\n" + "".join(f'{key} = "{value}"\n' for key, value in settings.items())
        for name, settings in merged.items()
        if name in kept
    ]
    return f'active = "{active}"\n\n' + "\n".join(sections)


def _write(path: Path, text: str) -> None:
    """As Prefect writes it: its home made private when it makes it, a new file 0600."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not path.exists():
        path.touch(mode=0o600)
    path.write_text(text, encoding="utf-8")
