"""``resume --more N`` on a sampled kind: the Gaussian-process fit takes seconds, so it is
`slow`, out of `make test-fast`. The quick cases are in tests/unit/search/test_extend.py."""

from __future__ import annotations

import pytest

from polyaxon_prefect.search import extend_study
from polyaxon_prefect.search._optuna._study import SweepStudy
from tests.unit.search._matrices import matrix
from tests.unit.search.test_extend import SPACE, _drain

pytestmark = pytest.mark.slow


def test_a_sampled_kind_asks_n_more_suggestions() -> None:
    data = {"kind": "bayes", "numInitialRuns": 2, "maxIterations": 2, "seed": 1, "params": SPACE}
    data["metric"] = {"name": "loss", "optimization": "minimize"}
    study = SweepStudy.open(matrix(data), study_name="b", storage=":memory:")
    assert len(_drain(study)) == 4
    assert extend_study(study, 3) == 7
    assert len(_drain(study)) == 3
