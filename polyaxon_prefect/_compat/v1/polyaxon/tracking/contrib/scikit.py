"""``polyaxon.tracking.contrib.scikit``: ``log_classifier`` / ``log_regressor``.

The same metric names as Polyaxon's (per-class ``precision/recall/fbeta_score/support_class_<i>
_test``, ``accuracy``, ``f1``; ``evs``, ``me``, ``mae``, ``r2`` for a regressor), the
estimator's params as inputs, and the test predictions as a CSV dataframe asset when pandas is
installed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _polyaxon_prefect_compat import Run, _jsonable
from sklearn.base import is_classifier, is_regressor
from sklearn.metrics import (
    accuracy_score,
    explained_variance_score,
    f1_score,
    max_error,
    mean_absolute_error,
    precision_recall_fscore_support,
    r2_score,
)

from polyaxon import tracking

__all__ = ["log_classifier", "log_regressor"]


def _params(estimator: Any) -> dict[str, Any]:
    params = {}
    for name, value in estimator.get_params().items():
        if value is None or isinstance(value, bool | int | float | str):
            params[name] = value
        else:
            params[name] = _jsonable(value)
    return params


def _predicted(
    model: Any, is_kind: Callable[[Any], bool], kind: str, X_test: Any, run: Run | None
) -> tuple[Run, Any]:
    """The run (the current one unless ``run`` is given) with the ``kind`` model's params
    logged as inputs, and its predictions on ``X_test``; a TypeError for another kind."""
    if not is_kind(model):
        raise TypeError(f"{kind} should be a scikit-learn {kind}")
    run = tracking.get_or_create_run(run)
    run.log_inputs(**_params(model))
    return run, model.predict(X_test)


def _predictions(run: Run, y_test: Any, y_pred: Any, nrows: int) -> None:
    try:
        import pandas as pd
    except ImportError:
        return
    if len(y_pred.shape) == 1:
        frame = pd.DataFrame(data={"y_true": y_test, "y_pred": y_pred})
        run.log_dataframe(df=frame.head(nrows), name="test_predictions")


def log_regressor(
    regressor: Any, X_test: Any, y_test: Any, nrows: int = 1000, run: Run | None = None
) -> None:
    run, y_pred = _predicted(regressor, is_regressor, "regressor", X_test, run)
    if len(y_pred.shape) == 1:
        results = {
            "evs": explained_variance_score(y_test, y_pred),
            "me": max_error(y_test, y_pred),
            "mae": mean_absolute_error(y_test, y_pred),
            "r2": r2_score(y_test, y_pred),
        }
    else:
        results = {"r2": regressor.score(X_test, y_test)}
    run.log_metrics(**results)
    _predictions(run, y_test, y_pred, nrows)


def log_classifier(
    classifier: Any, X_test: Any, y_test: Any, nrows: int = 1000, run: Run | None = None
) -> None:
    run, y_pred = _predicted(classifier, is_classifier, "classifier", X_test, run)
    results: dict[str, Any] = {}
    names = ("precision", "recall", "fbeta_score", "support")
    for name, values in zip(names, precision_recall_fscore_support(y_test, y_pred), strict=True):
        for index, value in enumerate(values):
            results[f"{name}_class_{index}_test"] = value
    results["accuracy"] = accuracy_score(y_test, y_pred)
    results["f1"] = f1_score(y_test, y_pred, average="weighted")
    run.log_metrics(**results)
    _predictions(run, y_test, y_pred, nrows)
