"""Per-source facts of ``init`` are read from the models, so a new source is one field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from polyaxon_prefect.specs import INIT_SOURCES, Init, InitSource


def test_init_sources_are_the_fields_that_fetch_something() -> None:
    assert set(INIT_SOURCES) == set(Init.model_fields) - Init.SETTINGS
    assert INIT_SOURCES[:3] == ("artifacts", "paths", "git")


def test_the_one_source_message_names_every_source_as_written_in_yaml() -> None:
    with pytest.raises(ValidationError) as info:
        Init.model_validate({"git": {"url": "https://h/r"}, "file": {"content": "x"}})
    message = info.value.errors()[0]["msg"]
    for name in INIT_SOURCES:
        assert (Init.model_fields[name].alias or name) in message
    assert message.endswith("got git, file")


def test_a_git_url_is_a_credential_url() -> None:
    step = Init.model_validate({"git": {"url": "https://user:token@host/repo.git"}})
    assert step.credential_urls() == ["https://user:token@host/repo.git"]


@pytest.mark.parametrize(
    "data",
    [
        {"git": {"revision": "main"}, "connection": "repo"},  # the URL is the connection's
        {"git": {"url": "{{ repo_url }}"}},  # not yet a URL
        {"file": {"content": "echo hi"}},
        {"lineageRef": "abc"},
        {"connection": "data"},
    ],
)
def test_sources_without_a_url_have_no_credential_urls(data: dict[str, object]) -> None:
    assert Init.model_validate(data).credential_urls() == []


def test_every_structured_source_says_where_its_credentials_are() -> None:
    for name in INIT_SOURCES:
        annotation = str(Init.model_fields[name].annotation)
        models = [m for m in InitSource.__subclasses__() if m.__name__ in annotation]
        for model in models:
            assert set(model.CREDENTIAL_URLS) <= set(model.model_fields)
