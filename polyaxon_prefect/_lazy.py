"""Names a package exports but loads on first use (PEP 562), so that importing the package
stays light: `polyaxon_prefect` and ``check`` must never import Prefect or Optuna."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, table: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``table`` maps each lazy name to the module
    that defines it (``"_study"`` or ``"cache._run_cache"`` under ``package``, or a full dotted
    name). The value is cached in the package on first use."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        target = module if module.startswith("polyaxon_prefect.") else f"{package}.{module}"
        value = getattr(import_module(target), name)
        setattr(import_module(package), name, value)
        return value

    return __getattr__
