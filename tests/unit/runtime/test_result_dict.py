"""`RunResult.to_dict`: what ``--json`` prints and the run's record hold, masked, as JSON."""

from __future__ import annotations

import dataclasses
import json

from polyaxon_prefect.runtime._result import RunResult
from polyaxon_prefect.runtime.logs._masking import mask_value, remember_secrets
from polyaxon_prefect.specs import Status

SECRET = "to-dict-s3cr3t-7f1c"


@dataclasses.dataclass
class _Point:
    label: str
    value: float


def test_every_string_of_every_op_is_masked_and_the_result_is_left_as_it_was() -> None:
    remember_secrets([SECRET])
    outputs = {"url": "https://user:pw@host/x", "token": SECRET, "pair": (SECRET, 1)}
    ops = {
        f"op{i}": {"status": Status.SUCCEEDED, "outputs": dict(outputs), "uuid": f"u{i}"}
        for i in range(3)
    }
    result = RunResult(Status.SUCCEEDED, uuid="u", ops=ops, metrics={"best": _Point(SECRET, 1)})

    data = result.to_dict()

    assert data == json.loads(json.dumps(data))  # plain JSON values only
    for entry in data["ops"].values():
        assert entry["status"] == "succeeded"
        assert entry["outputs"] == {"url": "https://***@host/x", "token": "***", "pair": ["***", 1]}
    assert data["metrics"] == {"best": {"label": "***", "value": 1}}  # a dataclass: its fields
    assert not {"trials", "best", "reason", "process", "problems", "timed_out"} & set(data)
    assert ops["op0"]["outputs"]["token"] == SECRET  # the ops' own values are not changed
    assert mask_value({SECRET: [SECRET]}) == {"***": ["***"]}
