"""The strict manifest validator of tests/unit/kubernetes, for the submit tests here."""

from tests.unit.kubernetes.conftest import validate  # noqa: F401  (a fixture, used by name)
