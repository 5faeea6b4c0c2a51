"""Read a Polyaxonfile (plus presets and ``-P`` params) into one validated, resolved operation.

The steps mirror Polyaxon's own pipeline (read -> presets -> references -> runPatch -> params ->
validate), with two differences that matter to users: every problem of every file is collected
before anything is raised, and each problem keeps the file, line and column it came from, even
when it sits in a component reached through ``pathRef`` three DAG levels down.
"""

from __future__ import annotations

import copy
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from polyaxon_prefect._source import (
    MAX_REFERENCES,
    Document,
    Positions,
    SourceError,
    problems_from_validation_error,
    read_source,
    suggest,
)
from polyaxon_prefect.exceptions import PolyaxonfileError, Problem
from polyaxon_prefect.legacy import LEGACY_KINDS, is_legacy
from polyaxon_prefect.loading._cli_overrides import CliOverrides, parse_cli_params
from polyaxon_prefect.loading._compat import normalize_image_params
from polyaxon_prefect.loading._shortcuts import apply_environment_shortcut
from polyaxon_prefect.loading._sources import LegacyPositions, Sources, source_identity
from polyaxon_prefect.loading._template_names import undefined_template_names
from polyaxon_prefect.loading._url_file import read_url_document, source_of
from polyaxon_prefect.loading._version import TOP_KINDS as _TOP_KINDS
from polyaxon_prefect.loading._version import check_version
from polyaxon_prefect.loading._yaml import parse_yaml
from polyaxon_prefect.specs import (
    LoadedPolyaxonfile,
    Operation,
    dag_of,
    is_dag_kind,
    typed_params,
    validate_dag,
    validate_params,
)
from polyaxon_prefect.specs.matrix._matrix_warnings import matrix_warnings

__all__ = ["LoadedPolyaxonfile", "load_polyaxonfile", "parse_cli_params"]

_REF_KEYS = ("hubRef", "urlRef", "pathRef", "dagRef", "component")
PathT = tuple[str | int, ...]


class _Loader:
    def __init__(self, hub_dirs: Sequence[Path], url_timeout: float | None) -> None:
        self.hub_dirs = tuple(hub_dirs)
        self.url_timeout = url_timeout
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []
        # Problems that leave nothing sound to validate (a bad header, a bad preset). A reference
        # that cannot be resolved is not one: the rest of the file is still checked.
        self.blocked = False
        self.failed_refs: list[PathT] = []  # where an unresolved reference sits in the operation
        self.references = 0  # component references resolved so far (`MAX_REFERENCES`)
        self.sources = Sources()
        self.files: list[str] = []
        self.notes: list[str] = []
        self.from_legacy = False

    # -- reading ---------------------------------------------------------------------------
    def read(self, path: Path | str) -> Document:
        if isinstance(path, str):  # a URL (`source_of`)
            self.files.append(path)
            return read_url_document(path, self.url_timeout)
        try:
            text = read_source(path)
        except SourceError as exc:
            raise PolyaxonfileError(
                [Problem(exc.message, rule=exc.rule, file=str(path), hint=exc.hint)]
            ) from None
        self.files.append(str(path))
        return parse_yaml(text, file=str(path))

    def legacy(self, doc: Document) -> Document:
        """Legacy (v0.x) files are converted to v1.1 data before anything else sees them."""
        if not isinstance(doc.data, dict) or not is_legacy(doc.data):
            return doc
        from polyaxon_prefect.legacy import convert

        conversion = convert(doc.data, positions=doc.positions)
        self.from_legacy = True
        for note in conversion.notes:
            self.notes.append(note.format())
        return Document(data=conversion.data, positions=LegacyPositions.of(doc.positions))

    def check_header(self, doc: Document, *, preset: bool = False) -> bool:
        data = doc.data
        if not isinstance(data, dict):
            self.problems.append(
                doc.positions.problem(
                    Problem(
                        "a Polyaxonfile must be a mapping (`version`, `kind`, ...), "
                        f"got {type(data).__name__}",
                        rule="top_level",
                    )
                )
            )
            return False
        if preset:
            return True
        if data.get("isPreset") is True and ("version" not in data or "kind" not in data):
            self.problems.append(
                doc.positions.problem(
                    Problem(
                        "this is a preset (`isPreset: true`), not a Polyaxonfile to check alone",
                        rule="preset_alone",
                        path=("isPreset",),
                        hint="check it with the file it patches: `-f main.yaml -f preset.yaml`",
                    )
                )
            )
            return False
        version_ok = check_version(doc, data, self.problems, self.warnings)
        kind_ok = self._check_kind(doc, data)
        return version_ok and kind_ok

    def _check_kind(self, doc: Document, data: dict[str, Any]) -> bool:
        kind = data.get("kind")
        if kind in LEGACY_KINDS and data.get("version") is None:
            return True  # the `version` hint already says how to read a legacy kind
        if kind in _TOP_KINDS:
            return True
        close = suggest(str(kind), _TOP_KINDS) if kind else None
        self.problems.append(
            doc.positions.problem(
                Problem(
                    "`kind` is missing"
                    if kind is None
                    else f"unknown top-level kind `{kind}`; expected component or operation",
                    rule="kind",
                    path=("kind",),
                    value=kind,
                    hint=f"did you mean `{close}`?"
                    if close
                    else "use `kind: component` "
                    "for a reusable definition or `kind: operation` to run one",
                )
            )
        )
        return False

    # -- references --------------------------------------------------------------------------
    def resolve_refs(
        self,
        op: dict[str, Any],
        prefix: PathT,
        base: Path | str,
        chain: tuple[tuple[str, str], ...] = (),
    ) -> None:
        """Inline ``pathRef``/``urlRef``/``hubRef`` components, recursively inside DAGs.

        ``base`` is where the op's file lives: a directory, or the URL of a component fetched by
        ``urlRef`` (its ``pathRef`` are then relative to that URL and fetched from there, never
        read from this machine's disk). ``chain`` holds the sources resolved on the way to this
        op (``(source, "file:line")``): a source met again on the same path is a cycle, however
        many siblings reference it, and `MAX_REFERENCES` bounds the references of the whole file.
        """
        from polyaxon_prefect.loading._refs import ignored_references, resolve_reference

        ignored = ignored_references(op)
        if ignored:
            self._warn_ignored(op, prefix, ignored)
        elif any(key in op for key in ("pathRef", "urlRef", "hubRef")):
            if isinstance(base, str) and isinstance(op.get("pathRef"), str):
                op["urlRef"] = urllib.parse.urljoin(base, op.pop("pathRef"))
            if not self._count_reference(op, prefix):
                return
            try:
                source = resolve_reference(
                    op,
                    base_dir=base if isinstance(base, Path) else Path("."),
                    hub_dirs=self.hub_dirs,
                    url_timeout=self.url_timeout,
                )
            except PolyaxonfileError as exc:
                self.problems.extend(self.sources.locate(p.prefixed(prefix)) for p in exc.problems)
                self.failed_refs.extend(p.prefixed(prefix).path for p in exc.problems)
                return
            if source is None:
                return
            key = next(k for k in ("pathRef", "urlRef", "hubRef") if k in op)
            where = self._where(prefix, key)
            identity = source_identity(source.file, op[key])
            if identity in {seen for seen, _ in chain}:
                self._cycle(prefix, key, [*chain, (identity, where)], identity)
                return
            chain = (*chain, (identity, where))
            for ref_key in ("pathRef", "urlRef", "hubRef"):
                op.pop(ref_key, None)
            op["component"] = source.data
            if source.positions is not None:  # None only for a dagRef, never resolved here
                self.sources.add((*prefix, "component"), source.positions)
            if source.file:
                self.files.append(str(source.file))
                base = str(source.file) if "://" in str(source.file) else Path(source.file).parent
        component = op.get("component")
        if not isinstance(component, dict):
            return
        # a top-level `environment` (Polyaxon 2.18's shortcut) is patched into the run
        problems, targets = apply_environment_shortcut(component)
        at = (*prefix, "component")
        self.problems.extend(self.sources.locate(p.prefixed(at)) for p in problems)
        for path in targets:
            self.sources.alias((*at, *path), (*at, "environment"))
        run = component.get("run")
        if not isinstance(run, dict) or not is_dag_kind(run.get("kind")):
            return
        operations = run.get("operations")
        if not isinstance(operations, list):
            return
        for index, child in enumerate(operations):
            if isinstance(child, dict):
                self.resolve_refs(
                    child, (*prefix, "component", "run", "operations", index), base, chain
                )

    def _count_reference(self, op: dict[str, Any], prefix: PathT) -> bool:
        self.references += 1
        if self.references <= MAX_REFERENCES.value:
            return True
        if self.references == MAX_REFERENCES.value + 1:
            key = next(k for k in ("pathRef", "urlRef", "hubRef") if k in op)
            self.problems.append(
                self.sources.locate(
                    Problem(
                        f"the file resolves more than {MAX_REFERENCES.value} component references",
                        rule="ref_limit",
                        path=(*prefix, key),
                        hint=MAX_REFERENCES.hint(),
                    )
                )
            )
        return False

    def _where(self, prefix: PathT, key: str) -> str:
        located = self.sources.locate(Problem("", rule="", path=(*prefix, key)))
        if located.file is None:
            return "<input>"
        return f"{located.file}:{located.line}" if located.line else str(located.file)

    def _cycle(self, prefix: PathT, key: str, chain: list[tuple[str, str]], identity: str) -> None:
        first, *rest = chain
        steps = " -> ".join([first[0], *(f"{source} (at {where})" for source, where in rest)])
        problem = Problem(
            f"component references form a cycle: {steps}",
            rule="ref_cycle",
            path=(*prefix, key),
            value=identity,
            hint="a component cannot reference itself, directly or through other components",
        )
        self.problems.append(self.sources.locate(problem))
        self.failed_refs.append((*prefix, key))

    def _warn_ignored(self, op: dict[str, Any], prefix: PathT, ignored: list[str]) -> None:
        """An inline component next to a reference wins; say which reference is not fetched."""
        for key in ignored:
            ref = op.pop(key)
            warning = Problem(
                f"`{key}: {ref}` is ignored: the operation also has an inline `component`, "
                "which is used instead (the reference is not fetched)",
                rule="ignored_reference",
                path=(*prefix, key),
                value=ref,
                hint=f"remove `{key}` or the inline `component` to silence this",
                severity="warning",
            )
            self.warnings.append(self.sources.locate(warning))

    # -- assembling --------------------------------------------------------------------------
    def assemble(
        self,
        path: Path | str,
        presets: Sequence[Path | str],
        cli_params: Mapping[str, str],
        overrides: CliOverrides | None = None,
    ) -> dict[str, Any] | None:
        from polyaxon_prefect.loading._patch import apply_preset, apply_run_patch

        doc = self.legacy(self.read(path))
        if not self.check_header(doc):
            return None
        data = copy.deepcopy(doc.data)
        if data["kind"] == "component":
            op: dict[str, Any] = {
                "version": data.get("version"),
                "kind": "operation",
                "component": data,
            }
            self.sources.add((), doc.positions, ())
            self.sources.add(("component",), doc.positions, ())
        else:
            op = data
            self.sources.add((), doc.positions, ())
        # where values that end up elsewhere came from: a runPatch and every preset
        patches: list[tuple[Positions, dict[str, Any]]] = []
        if isinstance(op.get("runPatch"), dict):
            patches.append((doc.positions, {"runPatch": op["runPatch"]}))
        for preset_path in presets:
            preset_doc = self.read(preset_path)
            if not self.check_header(preset_doc, preset=True) or not _check_preset(
                preset_doc, self.problems
            ):
                self.blocked = True
                continue
            preset = dict(preset_doc.data)
            op = apply_preset(op, preset)
            patches.append((preset_doc.positions, preset))
        base: Path | str = path if isinstance(path, str) else path.parent
        self.resolve_refs(op, (), base, ((source_identity(str(path), path), str(path)),))
        _apply_command_line(op, cli_params, overrides, self.sources)
        run_patch = op.get("runPatch")
        component = op.get("component")
        if run_patch and isinstance(component, dict) and isinstance(component.get("run"), dict):
            component = dict(component)
            component["run"] = apply_run_patch(
                component["run"], run_patch, op.get("patchStrategy") or "post_merge"
            )
            op["component"] = component
            op.pop("runPatch", None)
        for positions, patch in patches:
            self._locate_patch(op, patch, positions)
        for problem in normalize_image_params(op):
            self.problems.append(self.sources.locate(problem))
        return op

    def _locate_patch(self, op: dict[str, Any], patch: object, positions: Positions) -> None:
        """Point problems in values a preset (or a ``runPatch``) put there back at its file.

        A value is the patch's where the assembled operation still holds it unchanged (a merge
        strategy may have kept the operation's own value instead); ``runPatch`` values live in
        ``component.run`` once applied.
        """

        def walk(value: object, source: PathT) -> None:
            if not isinstance(value, dict):
                return
            for key, item in value.items():
                path = (*source, key)
                target = ("component", "run", *path[1:]) if path[0] == "runPatch" else path
                if _value_at(op, target) == item:
                    self.sources.add(target, positions, path)
                walk(item, path)

        walk(patch, ())

    def validate(self, op: dict[str, Any], given: frozenset[str] = frozenset()) -> Operation | None:
        # names a template will not find at run time, said with the model's problems
        self.problems.extend(self.sources.locate(p) for p in undefined_template_names(op, given))
        try:
            operation = Operation.model_validate(op)
        except ValidationError as exc:
            for problem in problems_from_validation_error(exc, op, Positions(), root=Operation):
                if any(
                    problem.path[: len(at)] == at
                    or (problem.rule == "operation_reference" and problem.path == at[:-1])
                    for at in self.failed_refs
                ):
                    continue  # the reference's own failure is already reported
                self.problems.append(self.sources.locate(problem.relocated(problem.path)))
            return None
        component = operation.component
        if component is None:
            return operation
        for problem in validate_params(
            component,
            operation.params,
            matrix=operation.matrix,
            joins=operation.joins,
            is_template=component.template is not None and bool(component.template.enabled),
            params_located=self.sources.has(("params",)),
        ):
            self.problems.append(self.sources.locate(problem))
        if dag_of(component.run) is not None:
            for problem in validate_dag(component, validate_params=validate_params):
                self.problems.append(self.sources.locate(problem.prefixed(("component",))))
        # what a sweep only approximates is a property of the file: `check` says it too
        self.warnings.extend(self.sources.locate(w) for w in matrix_warnings(operation))
        return operation


def _check_preset(doc: Document, problems: list[Problem]) -> bool:
    """Whether a preset is a valid partial operation; its problems go to ``problems``."""
    data = dict(doc.data)
    data["isPreset"] = True
    data.setdefault("kind", "operation")
    try:
        Operation.model_validate(data)
    except ValidationError as exc:
        problems.extend(problems_from_validation_error(exc, data, doc.positions, root=Operation))
        return False
    return True


def _apply_command_line(
    op: dict[str, Any],
    cli_params: Mapping[str, str],
    overrides: CliOverrides | None,
    sources: Sources,
) -> None:
    """``-P`` values and the command line's other fields (``-HP``, ``--name``...) set on the
    assembled ``op``, each located at its flag. ``path`` or a preset given to `assemble` as a
    ``str`` is a URL (`_url_file`)."""
    if cli_params:
        params = dict(op.get("params") or {})
        for name, value in cli_params.items():
            params[name] = {"value": value}
            sources.add(("params", name), Positions(file="-P"), ("params", name))
        op["params"] = params
    for at, flag in overrides.apply(op) if overrides is not None else ():
        sources.add(at, Positions(file=flag), at)


_ABSENT = object()


def _value_at(data: object, path: PathT) -> Any:
    for step in path:
        if not isinstance(data, dict) or step not in data:
            return _ABSENT
        data = data[step]
    return data


def _sorted(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[Any, ...]] = set()
    unique: list[Problem] = []
    for problem in problems:
        key = (problem.file, problem.line, problem.column, problem.path, problem.message)
        if key not in seen:
            seen.add(key)
            unique.append(problem)
    # file order, then line order: the order a user fixes them in
    files = list(dict.fromkeys(p.file for p in unique))
    return sorted(
        unique,
        key=lambda p: (files.index(p.file), p.line or 0, p.column or 0),
    )


def load_polyaxonfile(
    path: str | os.PathLike[str],
    presets: Sequence[str | os.PathLike[str]] = (),
    params: Mapping[str, Any] | None = None,
    *,
    hub_dirs: Sequence[str | os.PathLike[str]] = (),
    url_timeout: float | None = None,
    overrides: CliOverrides | None = None,
) -> LoadedPolyaxonfile:
    """Load, resolve and validate a Polyaxonfile; raise `PolyaxonfileError` with every problem.

    ``path`` may be a URL (`source_of`; ``run --url``). ``params`` are given as on the command
    line (strings parsed by the declared input type) or as Python values. ``overrides``: the
    other fields a command line sets (``-HP`` matrix, ``--name``, ``--tags``...), validated
    like the file's own and located at their flag.
    """
    loader = _Loader([Path(p) for p in hub_dirs], url_timeout)
    cli_params = {str(k): v for k, v in (params or {}).items()}
    op = loader.assemble(source_of(path), [source_of(p) for p in presets], cli_params, overrides)
    given = frozenset(cli_params)
    operation = loader.validate(op, given) if op is not None and not loader.blocked else None
    if loader.problems or operation is None:
        raise PolyaxonfileError(
            _sorted(loader.problems) or [Problem("invalid Polyaxonfile")],
            warnings=_sorted(loader.warnings),
        )
    typed = typed_params(operation.component, operation.params) if operation.component else {}
    return LoadedPolyaxonfile(
        operation=operation,
        params=typed,
        files=tuple(dict.fromkeys(loader.files)),
        legacy_notes=tuple(loader.notes),
        warnings=tuple(_sorted(loader.warnings)),
        given_params=frozenset(cli_params),
        from_legacy=loader.from_legacy,
    )


def load_operation_for_signature(
    path: str | os.PathLike[str],
    presets: Sequence[str | os.PathLike[str]] = (),
    *,
    hub_dirs: Sequence[str | os.PathLike[str]] = (),
    url_timeout: float | None = 10.0,
) -> Operation:
    """The operation of a file assembled (presets, refs) and validated as a model, without the
    param check: what `to_flow` builds a flow's signature from, where the flow's parameters are
    exactly the values a required input is still missing."""
    loader = _Loader([Path(p) for p in hub_dirs], url_timeout)
    assembled = loader.assemble(Path(path), [Path(p) for p in presets], {})
    return Operation.model_validate(assembled)
