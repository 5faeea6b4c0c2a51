"""``server start --set-profile`` writes the profiles file without importing Prefect
(`prefect.server._profile`): byte for byte what Prefect's own ``prefect config set
PREFECT_API_URL=...`` (``update_current_profile``) writes from the same file, read back by
Prefect as the profile the next ``prefect`` command uses; where only Prefect can say (a
setting it might rename, a settings file in the working folder) nothing is written."""

from __future__ import annotations

from pathlib import Path

import prefect.context
import pytest
from prefect.settings import PREFECT_API_URL, Settings, update_current_profile
from prefect.settings.profiles import load_profiles

from polyaxon_prefect.prefect.server._profile import write_api_url

URL = "http://127.0.0.1:4321/api"
MINE = 'active = "local"\n\n[profiles.ephemeral]\n\n[profiles.mine]\nPREFECT_API_URL = "http://h:1/api"\n'


def _in_home(home: Path, monkeypatch: pytest.MonkeyPatch) -> prefect.context.SettingsContext:
    """Prefect's root settings context of ``home`` (profiles read from its file), as a fresh
    ``prefect`` command in that home builds it."""
    monkeypatch.setenv("PREFECT_HOME", str(home))
    monkeypatch.delenv("PREFECT_PROFILES_PATH", raising=False)
    with prefect.context.SettingsContext(
        profile=prefect.context.get_settings_context().profile, settings=Settings()
    ):
        return prefect.context.root_settings_context()


def _both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str | None) -> tuple[str, str]:
    """The profiles file after this package's write and after Prefect's, from ``before``."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for home in (ours, theirs):
        home.mkdir()
        if before is not None:
            (home / "profiles.toml").write_text(before)
    monkeypatch.setenv("PREFECT_HOME", str(ours))
    assert write_api_url(URL)
    with _in_home(theirs, monkeypatch):
        update_current_profile({PREFECT_API_URL: URL})
    return (ours / "profiles.toml").read_text(), (theirs / "profiles.toml").read_text()


@pytest.mark.parametrize(
    "before",
    [
        None,
        MINE,
        'active = "ephemeral"\n\n[profiles.ephemeral]\nPREFECT_API_URL = "http://o/api"\n',
    ],
    ids=["no-file", "other-profiles", "a-url-already"],
)
def test_the_file_is_prefects_own_and_prefect_reads_the_url_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str | None
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 99\n")  # not Prefect's
    ours, theirs = _both(tmp_path, monkeypatch, before)
    assert ours == theirs
    with _in_home(tmp_path / "ours", monkeypatch) as context:
        assert context.profile.settings[PREFECT_API_URL] == URL
        assert load_profiles().active_name == ("local" if before == MINE else "ephemeral")
    if before is None:
        assert (tmp_path / "ours" / "profiles.toml").stat().st_mode & 0o777 == 0o600


def test_the_profile_named_by_prefect_profile_is_the_one_pointed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_PROFILE", "mine")
    ours, theirs = _both(tmp_path, monkeypatch, MINE)
    assert ours == theirs
    assert '[profiles.mine]\nPREFECT_API_URL = "http://127.0.0.1:4321/api"\n' in ours


@pytest.mark.parametrize(
    "setup",
    [
        "a-setting-prefect-may-rename",
        "prefect.toml",
        "tool.prefect",
        ".env",
        "profiles-path",
        "unknown-profile",
    ],
)
def test_where_only_prefect_can_say_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    before = MINE
    if setup == "a-setting-prefect-may-rename":
        before += 'PREFECT_API_DATABASE_CONNECTION_URL = "sqlite+aiosqlite:///x.db"\n'
    elif setup == "prefect.toml":
        (tmp_path / "prefect.toml").write_text('home = "elsewhere"\n')
    elif setup == "tool.prefect":
        (tmp_path / "pyproject.toml").write_text('[tool.prefect]\nhome = "elsewhere"\n')
    elif setup == ".env":
        (tmp_path / ".env").write_text("PREFECT_HOME=elsewhere\n")
    elif setup == "profiles-path":
        monkeypatch.setenv("PREFECT_PROFILES_PATH", str(tmp_path / "other.toml"))
    else:
        monkeypatch.setenv("PREFECT_PROFILE", "nobody")
    (tmp_path / "profiles.toml").write_text(before)
    assert not write_api_url(URL)
    assert (tmp_path / "profiles.toml").read_text() == before
    assert not (tmp_path / "other.toml").exists()
