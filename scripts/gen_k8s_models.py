"""Write ``polyaxon_prefect/specs/kubernetes/_k8s.py``, ``_k8s_objects.py`` and ``_k8s_values.py``:
static pydantic models of the Kubernetes objects that a Polyaxonfile embeds (container,
volumes, tolerations, affinity, ...).

Why generate instead of importing the Kubernetes client at run time: the client packages take
over half a second to import and check nothing (their models accept any type and ignore
nothing useful), while ``polyaxon-prefect check`` must be fast and must reject unknown keys.

Source of truth: the JSON schemas bundled with the ``kubernetes-validate`` package (one folder
per Kubernetes release, derived from the official OpenAPI document). They carry everything the
models need in one place: field types, which fields are ``required``, ``int-or-string`` and
``quantity`` unions, and ``additionalProperties: false`` in the strict variant. The client
packages' model classes were the alternative, but they spell ``IntOrString`` and quantities as
plain ``object``/``str`` and only reveal required fields inside setter source code.

Snake-case field names follow the Kubernetes Python client (``hostIPC`` -> ``host_ipc``,
``targetWWNs`` -> ``target_wwns``) because Polyaxon accepts those spellings in YAML.

Usage::

    python scripts/gen_k8s_models.py [--k8s-version 1.36.0] [--output FILE] [--check]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import keyword
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "polyaxon_prefect" / "specs" / "kubernetes" / "_k8s.py"
OBJECTS_NAME = "_k8s_objects.py"
VALUES_NAME = "_k8s_values.py"
"""The module both others import: the leniently read values (`Quantity`, `CommandList`,
`EnvValue`) and the roots that nested objects hold too (a probe's `ExecAction`), with what
those nest, so neither of the other two modules imports the other back."""
"""The module of the objects the roots nest, written next to the output: the roots (in
``_k8s.py``) reference them with `lazy_model`, so a file pays for importing and building them
only when it writes one (``check`` of a container with an image and a command needs none)."""

# Kubernetes 1.36 matches the newest client that Polyaxon 2.18 allows (kubernetes<37) and the
# kubernetes_asyncio release that prefect-kubernetes installs, so every field we accept can be
# serialized by the client that submits it.
DEFAULT_VERSION = "1.36.0"

# Public name -> schema definition. Everything reachable from these is generated too.
ROOTS = {
    "Container": "io.k8s.api.core.v1.Container",
    "Volume": "io.k8s.api.core.v1.Volume",
    "Toleration": "io.k8s.api.core.v1.Toleration",
    "Affinity": "io.k8s.api.core.v1.Affinity",
    "PodSecurityContext": "io.k8s.api.core.v1.PodSecurityContext",
    "HostAlias": "io.k8s.api.core.v1.HostAlias",
    "PodDNSConfig": "io.k8s.api.core.v1.PodDNSConfig",
    "ExecAction": "io.k8s.api.core.v1.ExecAction",
    "HTTPGetAction": "io.k8s.api.core.v1.HTTPGetAction",
    "PodFailurePolicy": "io.k8s.api.batch.v1.PodFailurePolicy",
    "ResourceRequirements": "io.k8s.api.core.v1.ResourceRequirements",
}

# Definitions that are values, not objects: rendered as a type expression.
SCALARS = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "int | str",
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "str",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "str",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "dict[str, Any]",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "Any",
}

# Required by Kubernetes but optional in a Polyaxonfile: Polyaxon fills them in itself.
RELAXED = {
    # Polyaxon defaults the main container's name to "" and names it when it builds the pod
    # (and names sidecars/init containers too), so files routinely leave it out.
    ("io.k8s.api.core.v1.Container", "name"): (
        "Kubernetes requires `name`, but Polyaxon names containers itself when it builds the pod."
    ),
}

# No ``from __future__ import annotations`` in the output: classes come in dependency order, so
# annotations can be real objects, which spares pydantic compiling ~450 strings at import time.
# Fields where Polyaxon is more lenient than Kubernetes: its converter turns `command: "x"`
# into `["x"]`, stringifies list items, and JSON-encodes non-string env values. Files rely on
# that, so the models accept the same inputs (normalized) instead of rejecting them.
OVERRIDES = {
    ("io.k8s.api.core.v1.Container", "command"): "CommandList",
    ("io.k8s.api.core.v1.Container", "args"): "CommandList",
    ("io.k8s.api.core.v1.EnvVar", "value"): "EnvValue",
}

VALUES_PREAMBLE = '''
import json
import re
from typing import Annotated, Any

from pydantic import BeforeValidator{field}
from pydantic_core import PydanticCustomError

from polyaxon_prefect.specs._base import BaseSpec, Ref, is_template

__all__ = [
{all_names}
]

# The Kubernetes resource.Quantity grammar (apimachinery), e.g. 500m, 2Gi, 1.5, 1e3.
QUANTITY_REGEX = re.compile(
    r"^[+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+)"
    r"(?:[KMGTPE]i|[numkMGTPE]|[eE][+-]?(?:[0-9]+(?:\\.[0-9]*)?|\\.[0-9]+))?$"
)


def _check_quantity(value: object) -> object:
    """Numbers and quantity strings pass; a `{{{{ template }}}}` is checked once rendered."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PydanticCustomError(
            "quantity",
            "expected a resource quantity such as 2, 0.5, 500m or 4Gi",
            {{"hint": "write a number, or a string with a unit like 500m or 4Gi"}},
        )
    if isinstance(value, str) and not is_template(value) and not QUANTITY_REGEX.match(value):
        raise PydanticCustomError(
            "quantity",
            "expected a resource quantity: a number with an optional unit suffix",
            {{"hint": "write it like 2, 0.5, 500m, 4Gi or 1e3"}},
        )
    return value


Quantity = Annotated[int | float | str, BeforeValidator(_check_quantity)]
"""A Kubernetes resource quantity (``2``, ``0.5``, ``"500m"``, ``"4Gi"``) or a template."""


def _to_command_list(value: object) -> object:
    """Polyaxon's reading of `command`/`args`: a plain string is a one-item list and empty items
    are dropped; a `{{{{ template }}}}` string stays as it is because it may render to a whole list
    (``args: "{{{{ params.as_args }}}}"``). A YAML boolean, number or null where a word is expected
    is refused, located at its item: ``true`` would run as ``True`` and ``1.0e3`` as ``1000.0``,
    not as written."""
    if isinstance(value, str):
        return value if is_template(value) else [value]
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if item is None or isinstance(item, bool | int | float):
                raise PydanticCustomError(
                    "command_word",
                    "a command or args word must be a string, not the YAML {{kind}} {{written}}",
                    _word_context(index, item),
                )
        return [item for item in value if item != ""]
    return value


def _word_context(index: int, item: object) -> dict[str, Any]:
    """Where the `command_word` problem points, and how to write the word as meant."""
    if item is None or isinstance(item, bool):
        written = "null" if item is None else str(item).lower()
        kind = "null" if item is None else "boolean"
        return {{"at": index, "kind": kind, "written": written, "hint": f"quote it: '{{written}}'"}}
    # YAML has already turned the number into a float or int: its spelling is lost
    hint = "quote it as you mean it to be passed (1e3 is read as the number 1000.0)"
    return {{"at": index, "kind": "number", "written": str(item), "hint": hint}}


CommandList = Annotated[list[str] | Ref, BeforeValidator(_to_command_list)]
"""A container's `command`/`args`: a list of strings, or a template that renders to one."""


def _env_value(value: object) -> object:
    """Polyaxon JSON-encodes non-string env values (``1`` -> ``"1"``, ``true`` -> ``"true"``)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float | bool | list | dict):
        return json.dumps(value)
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]
"""An env var value: a string; numbers, booleans, lists and maps are stored as JSON text."""
'''


def find_schema_file(version: str) -> Path:
    """The strict definitions file of ``version`` inside the installed kubernetes_validate."""
    spec = importlib.util.find_spec("kubernetes_validate")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("kubernetes-validate is not installed: pip install kubernetes-validate")
    base = Path(next(iter(spec.submodule_search_locations))) / "kubernetes-json-schema"
    path = base / f"v{version}-local-strict" / "_definitions.json"
    if not path.exists():
        available = sorted(p.name for p in base.glob("v*-local-strict"))
        raise SystemExit(f"no schemas for Kubernetes {version}; available: {available}")
    return path


def to_snake(name: str) -> str:
    """The Kubernetes Python client's attribute spelling (openapi-generator's ``underscore``)."""
    word = re.sub(r"([A-Z]+)([A-Z][a-z][a-z]+)", r"\1_\2", name)
    word = re.sub(r"([a-z\d])([A-Z])", r"\1_\2", word)
    return word.replace("-", "_").replace(" ", "_").lower()


def python_name(json_name: str, reserved: set[str]) -> str:
    name = to_snake(json_name.lstrip("$"))
    if keyword.iskeyword(name) or name in reserved:
        name += "_"
    return name


def class_name(definition: str) -> str:
    return definition.rsplit(".", 1)[-1]


def nonnull_type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return kinds[0] if kinds else None
    return kind


def is_model(definitions: dict[str, Any], name: str) -> bool:
    return name not in SCALARS and "properties" in definitions[name]


def render_type(schema: dict[str, Any], definitions: dict[str, Any], deps: set[str]) -> str:
    """The Python annotation for one property schema (without ``| None``)."""
    if "$ref" in schema:
        target = schema["$ref"].rsplit("/", 1)[-1]
        if target in SCALARS:
            return SCALARS[target]
        if is_model(definitions, target):
            deps.add(target)
            return class_name(target)
        return render_type(definitions[target], definitions, deps)
    kind = nonnull_type(schema)
    if kind == "string":
        return "str"
    if kind == "integer":
        return "int | Ref"
    if kind == "number":
        return "float | Ref"
    if kind == "boolean":
        return "bool | Ref"
    if kind == "array":
        return f"list[{render_type(schema.get('items', {}), definitions, deps)}]"
    if kind == "object":
        values = schema.get("additionalProperties")
        if isinstance(values, dict):
            return f"dict[str, {render_type(values, definitions, deps)}]"
        return "dict[str, Any]"
    return "Any"


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    sentence = match.group(1) if match else text
    sentence = sentence.encode("ascii", "ignore").decode()
    return sentence.replace("\\", "\\\\").replace('"""', "'''")


def reachable(definitions: dict[str, Any], starts: list[str] | None = None) -> list[str]:
    """Model definitions reachable from ``starts`` (the roots), dependencies before dependants."""
    order: list[str] = []
    state: dict[str, str] = {}

    def visit(name: str) -> None:
        if state.get(name) == "done":
            return
        if state.get(name) == "open":
            raise SystemExit(f"reference cycle through {name}: not supported by this generator")
        state[name] = "open"
        deps: set[str] = set()
        for prop in definitions[name]["properties"].values():
            render_type(prop, definitions, deps)
        for dep in sorted(deps):
            visit(dep)
        state[name] = "done"
        order.append(name)

    for root in starts if starts is not None else ROOTS.values():
        visit(root)
    return order


def render_class(name: str, definitions: dict[str, Any], reserved: set[str]) -> list[str]:
    from pydantic.alias_generators import to_camel

    definition = definitions[name]
    lines = [f"class {class_name(name)}(BaseSpec):"]
    doc = first_sentence(definition.get("description", "")) or f"Kubernetes {class_name(name)}."
    wrapped = textwrap.wrap(doc, width=88)
    if len(wrapped) == 1:
        lines.append(f'    """{wrapped[0]}"""')
    else:
        lines.append(f'    """{wrapped[0]}')
        lines.extend(f"    {line}" for line in wrapped[1:])
        lines.append('    """')
    lines.append("")
    required = set(definition.get("required", []))
    for json_name in sorted(definition["properties"]):
        prop = definition["properties"][json_name]
        annotation = OVERRIDES.get((name, json_name)) or render_type(prop, definitions, set())
        attr = python_name(json_name, reserved)
        relaxed = RELAXED.get((name, json_name))
        if relaxed:
            lines.append(f"    # {relaxed}")
        optional = json_name not in required or relaxed
        if optional:
            annotation += " | None"
        if to_camel(attr) == json_name:
            # BaseSpec's alias generator already gives this alias; a bare default keeps the
            # file readable and spares pydantic ~400 Field() merges at import time
            lines.append(f"    {attr}: {annotation}" + (" = None" if optional else ""))
        elif optional:
            lines.append(f'    {attr}: {annotation} = Field(None, alias="{json_name}")')
        else:
            lines.append(f'    {attr}: {annotation} = Field(alias="{json_name}")')
    return lines


HEADER = [
    "# Generated by scripts/gen_k8s_models.py from the Kubernetes OpenAPI schema v{version}",
    "# (the JSON schemas shipped with kubernetes-validate). Do not edit: regenerate instead.",
]
OBJECTS_MODULE = "polyaxon_prefect.specs.kubernetes." + OBJECTS_NAME.removesuffix(".py")
VALUES_MODULE = "polyaxon_prefect.specs.kubernetes." + VALUES_NAME.removesuffix(".py")
HELPERS = ["CommandList", "EnvValue", "Quantity"]


def _used(names: list[str], lines: list[str]) -> list[str]:
    """The ``names`` that the field lines among ``lines`` mention as whole words, sorted (a
    docstring that names a type does not count)."""
    fields = "\n".join(line for line in lines if re.match(r"    [a-z_0-9]+: ", line))
    return sorted(name for name in names if re.search(rf"\b{re.escape(name)}\b", fields))


def generate(version: str) -> tuple[str, str, str]:
    """The roots', the nested objects' and the shared values' modules, unformatted."""
    schema_file = find_schema_file(version)
    definitions = json.loads(schema_file.read_text())["$defs"]
    from pydantic import BaseModel

    reserved = {name for name in dir(BaseModel) if not name.startswith("_")} | {"to_dict"}
    names = reachable(definitions)
    classes = [class_name(n) for n in names]
    duplicates = {c for c in classes if classes.count(c) > 1}
    if duplicates:
        raise SystemExit(f"class name clash: {sorted(duplicates)}")
    for public, definition in ROOTS.items():
        if class_name(definition) != public:
            raise SystemExit(f"root {definition} would not be exported as {public}")
    rendered = {n: render_class(n, definitions, reserved) for n in names}
    roots = [n for n in names if n in ROOTS.values()]
    objects = [n for n in names if n not in ROOTS.values()]
    # roots that a nested object holds too, and what they nest: shared through the values module
    nested_roots = _used(
        [class_name(n) for n in roots], [line for n in objects for line in rendered[n]]
    )
    shared = reachable(definitions, [ROOTS[name] for name in nested_roots])
    roots = [n for n in roots if n not in shared]
    objects = [n for n in objects if n not in shared]
    shared_names = [class_name(n) for n in shared]

    root_classes: list[str] = []
    for name in roots:
        root_classes.extend(["", "", *rendered[name]])
    lazy = _used([class_name(n) for n in objects], root_classes)
    from_values = sorted(
        {*_used([*HELPERS, *shared_names], root_classes), *nested_roots}, key=str.lower
    )

    out = [
        *(line.format(version=version) for line in HEADER),
        '"""Kubernetes objects embedded in Polyaxonfiles, as strict pydantic models.',
        "",
        "One class per Kubernetes type reachable from the public roots. Unknown keys are",
        "rejected, camelCase (YAML) and snake_case (Python client) keys are both accepted, and",
        "every integer/boolean field may also hold a Polyaxon ``{{ template }}`` string.",
        "",
        f"The roots live here; the objects they nest live in `{OBJECTS_NAME[:-3]}`,",
        "referenced with `lazy_model`: imported and built only when a file writes one. What",
        f"both hold (quantities, env values, a probe's actions) is in `{VALUES_NAME[:-3]}`.",
        '"""',
        "",
        "from typing import TYPE_CHECKING" + (", Any" if _used(["Any"], root_classes) else ""),
        "",
        "from pydantic import Field" if "Field(" in "\n".join(root_classes) else "",
        "",
        "from polyaxon_prefect.specs._base import BaseSpec"
        + (", Ref" if _used(["Ref"], root_classes) else ""),
        f"from {VALUES_MODULE} import {', '.join(from_values)}",
        "from polyaxon_prefect.specs.kubernetes._lazy_model import lazy_model",
        "",
        "__all__ = [",
        *(f'    "{public}",' for public in sorted(ROOTS)),
        "]",
    ]
    out.extend(["", "if TYPE_CHECKING:"])
    out.append(f"    from {OBJECTS_MODULE} import (")
    out.extend(f"        {name}," for name in lazy)
    out.extend(["    )", "else:", f'    _OBJECTS = "{OBJECTS_MODULE}"'])
    out.extend(f'    {name} = lazy_model(_OBJECTS, "{name}")' for name in lazy)
    out.extend(root_classes)
    roots_text = "\n".join(out).rstrip() + "\n"

    body: list[str] = []
    for name in objects:
        body.extend(["", "", *rendered[name]])
    body_text = "\n".join(body)
    helpers = _used([*HELPERS, *shared_names], body)
    objects_out = [
        *(line.format(version=version) for line in HEADER),
        '"""The Kubernetes objects that the roots of `_k8s` nest (probes, volume sources, env',
        "sources, affinity terms...), imported on first use through `lazy_model`.",
        '"""',
        "",
        "from typing import Any" if _used(["Any"], body) else "",
        "",
        "from pydantic import Field" if "Field(" in body_text else "",
        "",
        "from polyaxon_prefect.specs._base import BaseSpec"
        + (", Ref" if _used(["Ref"], body) else ""),
        f"from {VALUES_MODULE} import {', '.join(helpers)}" if helpers else "",
        "",
        "__all__ = [",
        *(f'    "{class_name(n)}",' for n in sorted(objects, key=class_name)),
        "]",
        *body,
    ]

    shared_classes: list[str] = []
    for name in shared:
        shared_classes.extend(["", "", *rendered[name]])
    values_out = [
        *(line.format(version=version) for line in HEADER),
        '"""What the Kubernetes roots (`_k8s`) and the objects they nest (`_k8s_objects`) both',
        "hold: the values Polyaxon reads leniently (quantities, command lists, env values) and the",
        "roots a nested object holds too (a probe's actions), with what they nest.",
        '"""',
        *VALUES_PREAMBLE.format(
            field=", Field" if "Field(" in "\n".join(shared_classes) else "",
            all_names="\n".join(f'    "{n}",' for n in sorted([*HELPERS, *shared_names])),
        ).split("\n"),
        *shared_classes,
    ]
    return (
        roots_text,
        "\n".join(objects_out).rstrip() + "\n",
        "\n".join(values_out).rstrip() + "\n",
    )


def ruff_format(text: str, target: Path) -> str:
    """Format like the repository does, so the committed file is stable under ``ruff format``
    (imports sorted by ruff's own rule first: the lazy objects' names mix acronyms and words)."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff is needed to format the generated module: pip install ruff")
    text = subprocess.run(
        [ruff, "check", "--select", "I", "--fix-only", "--stdin-filename", str(target), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    ).stdout
    result = subprocess.run(
        [ruff, "format", "--stdin-filename", str(target), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    if result.returncode != 0:
        raise SystemExit(f"ruff format failed:\n{result.stderr}")
    return result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k8s-version", default=DEFAULT_VERSION)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is not up to date"
    )
    args = parser.parse_args(argv)
    roots, objects, values = generate(args.k8s_version)
    outputs = {
        args.output: ruff_format(roots, DEFAULT_OUTPUT),
        args.output.with_name(OBJECTS_NAME): ruff_format(
            objects, DEFAULT_OUTPUT.with_name(OBJECTS_NAME)
        ),
        args.output.with_name(VALUES_NAME): ruff_format(
            values, DEFAULT_OUTPUT.with_name(VALUES_NAME)
        ),
    }
    if args.check:
        for path, text in outputs.items():
            current = path.read_text() if path.exists() else ""
            if current != text:
                print(f"{path} is out of date: run scripts/gen_k8s_models.py", file=sys.stderr)
                return 1
        return 0
    for path, text in outputs.items():
        path.write_text(text)
        print(f"wrote {path} ({len(text)} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
