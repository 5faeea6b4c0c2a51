"""Compare ARCHITECTURE.md's layer table with the import-linter ``layers`` contract.

The contract is what CI enforces; the table is what a contributor reads. They must give the
same order, or the doc teaches an import the contract refuses (or hides one it allows).
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

__all__ = ["contract_layers", "doc_layers", "layer_mismatches"]

_ROW = re.compile(r"^\|\s*([0-9][^|]*?)\s*\|([^|]*)\|")
_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_.]*)`")


def contract_layers(importlinter: Path, root_package: str) -> list[set[str]]:
    """The ``layers`` contract's layers, lowest first, as sets of names under the root
    package (``polyaxon_prefect.kubernetes | polyaxon_prefect.dag`` is one layer of two)."""
    config = configparser.ConfigParser()
    config.read(importlinter, encoding="utf-8")
    for section in config.sections():
        if config[section].get("type", "").strip() == "layers":
            lines = [line.strip() for line in config[section]["layers"].splitlines()]
            layers = [
                {name.strip().removeprefix(f"{root_package}.") for name in line.split("|")}
                for line in lines
                if line
            ]
            return list(reversed(layers))
    return []


def doc_layers(architecture: Path) -> list[tuple[float, set[str]]]:
    """The table's rows as (layer number, package names); ``4½`` reads as 4.5."""
    rows = []
    for line in architecture.read_text(encoding="utf-8").splitlines():
        match = _ROW.match(line)
        if not match:
            continue
        number = float(match.group(1).replace("½", ".5"))
        rows.append((number, set(_NAME.findall(match.group(2)))))
    return rows


def layer_mismatches(importlinter: Path, architecture: Path, root_package: str) -> list[str]:
    """Each package whose place differs between the contract and the doc, said plainly."""
    contract = contract_layers(importlinter, root_package)
    levels: dict[float, set[str]] = {}
    for number, names in doc_layers(architecture):
        levels.setdefault(number, set()).update(names)
    documented = [levels[number] for number in sorted(levels)]
    known = set().union(*contract) if contract else set()
    documented = [names & known for names in documented]
    documented = [names for names in documented if names]
    problems = []
    for name in sorted(known - set().union(*documented)):
        problems.append(f"`{name}` is in the layers contract but not in the table")
    for position, (want, have) in enumerate(zip(contract, documented, strict=False)):
        if want != have:
            problems.append(
                f"layer {position} (from the bottom): the contract has {sorted(want)}, "
                f"the table {sorted(have)}"
            )
            break
    if len(contract) != len(documented) and not problems:
        problems.append(f"the contract has {len(contract)} layers, the table {len(documented)}")
    return problems
