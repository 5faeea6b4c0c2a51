"""The legacy ``run``/``build``/``environment`` sections as a v1.1 ``run`` (a job, or a
distributed run whose leading replica runs the command)."""

from __future__ import annotations

import copy
import re
from typing import Any

from polyaxon_prefect.legacy._convert_base import (
    RESOURCE_NAMES,
    ConverterBase,
    Path,
)
from polyaxon_prefect.legacy._schema import (
    FRAMEWORK_BLOCKS,
    Build,
    IfCmd,
    PodEnvironment,
    PodResources,
    Replicas,
    Run,
)
from polyaxon_prefect.specs import MAIN_REPLICAS

__all__ = ["RunConverter"]

_RUN_KIND = {
    "tensorflow": "tfjob",
    "pytorch": "pytorchjob",
    "mxnet": "mxjob",
    "horovod": "mpijob",
    "mpi": "mpijob",
}


_DROPPED = "build option with no v1.1 equivalent; dropped"
_BUILD_JOB = (
    "a lone `ref` names an earlier build job of a Polyaxon v0.x server (polyaxon-schemas 0.5), "
    "whose image is not known here: the job runs without an image (a local process; set "
    "`container.image` to run it on Kubernetes)"
)


class RunConverter(ConverterBase):
    """The ``run`` part of the conversion of a legacy file."""

    def _run(self) -> dict[str, Any]:
        spec = self.spec
        env = spec.environment
        container = self._container()
        replicas = self._replicas()
        main_env, main_resources, env_from = self._pod(env, ("environment",))
        if main_resources:
            container["resources"] = main_resources
        if env_from:
            container["envFrom"] = env_from
        if replicas is None:
            run: dict[str, Any] = {"kind": "job"}
            if main_env:
                run["environment"] = main_env
            run["container"] = container
            return run
        block_key, block, framework = replicas
        kind = "mpijob" if spec.backend == "mpi" else _RUN_KIND[framework]
        path: Path = ("environment", block_key)
        if block_key != "replicas":
            self.note(
                path,
                f"the 0.1-0.4 `environment.{block_key}` block is read as `environment.replicas`",
            )
        if spec.backend == "kubeflow":
            self.note(("backend",), "the Kubeflow operators now run every distributed kind")
        run = {"kind": kind}
        main: dict[str, Any] = {"replicas": 1}
        if main_env:
            main["environment"] = main_env
        main["container"] = container
        run[MAIN_REPLICAS[kind]] = main
        base = {k: v for k, v in container.items() if k not in ("resources",)}
        if kind == "mpijob":
            base.pop("command", None)
            base.pop("args", None)
            self.note(
                path,
                "MPI: only the launcher runs the command (it must start the workers, "
                "e.g. with `mpirun`); workers get the image and settings only",
            )
        worker = self._replica(block, "worker", block.n_workers, base, path)
        if worker is not None:
            run["worker"] = worker
        ps_name = "server" if kind == "mxjob" else "ps"
        if kind in ("tfjob", "mxjob"):
            ps = self._replica(block, "ps", block.n_ps, base, path, target=ps_name)
            if ps is not None:
                run[ps_name] = ps
        if kind == "mxjob":
            run["mode"] = "MXTrain"
        if block.delay_workers_by_global_step is not None:
            self.note((*path, "delay_workers_by_global_step"), "no v1.1 equivalent; dropped")
        if block.run_config is not None:
            self.note((*path, "run_config"), "no v1.1 equivalent; dropped")
        return run

    def _replicas(self) -> tuple[str, Replicas, str] | None:
        env = self.spec.environment
        if env is None:
            return None
        for key in ("replicas", *FRAMEWORK_BLOCKS):
            block = getattr(env, key)
            if block is not None:
                if self.spec.backend == "mpi":
                    return key, block, "mpi"
                framework = key if key != "replicas" else self.spec.framework
                assert framework is not None  # checked in _checks
                return key, block, framework
        return None

    def _replica(
        self,
        block: Replicas,
        name: str,
        count: int | None,
        base: dict[str, Any],
        path: Path,
        *,
        target: str | None = None,
    ) -> dict[str, Any] | None:
        default: PodEnvironment | None = getattr(block, f"default_{name}")
        indexed: list[PodEnvironment] = getattr(block, name) or []
        if not count:
            for key in (f"default_{name}", name):
                if getattr(block, key) is not None:
                    self.note(
                        (*path, key),
                        f"ignored: there are no {name} replicas "
                        f"(`n_{'workers' if name == 'worker' else 'ps'}` is not set)",
                    )
            return None
        replica: dict[str, Any] = {"replicas": count}
        container = copy.deepcopy(base)
        if default is not None:
            env, resources, env_from = self._pod(default, (*path, f"default_{name}"))
            if env:
                replica["environment"] = env
            if resources:
                container["resources"] = resources
            if env_from:
                container["envFrom"] = env_from
        replica["container"] = container
        overrides: dict[int, dict[str, Any]] = {}
        for position, item in enumerate(indexed):
            item_path = (*path, name, position)
            assert item.index is not None  # checked by the schema
            if item.index >= count:
                self.note(
                    item_path,
                    f"index {item.index} is out of range for {count} "
                    f"{target or name} replicas; ignored",
                )
                continue
            env, resources, env_from = self._pod(item, item_path, allow_refs=False)
            override: dict[str, Any] = {}
            if env:
                override["environment"] = env
            if resources:
                override["resources"] = resources
            if override:
                overrides[item.index] = override
        if overrides:
            replica["indexOverrides"] = dict(sorted(overrides.items()))
        return replica

    def _container(self) -> dict[str, Any]:
        spec = self.spec
        container: dict[str, Any] = {}
        build: Build | None = spec.build
        run: Run | None = spec.run
        image = build.image if build is not None else None
        if run is not None and run.image:
            if image and image != run.image:
                self.note(("run", "image"), "`build.image` is used; `run.image` is ignored")
            image = image or run.image
        if image:
            container["image"] = image
        if build is not None:
            self._note_build(build)
        if run is not None:
            container["command"] = ["/bin/bash", "-c", self._cmd(run.cmd)]
            for key in ("steps", "build_steps"):
                if getattr(run, key):
                    self.note(
                        ("run", key), "build steps are not run by v1.1; bake them into the image"
                    )
        elif spec.kind in ("experiment", "group", "job"):
            self.note((), "no `run.cmd`: the container runs its image's default command")
        env_vars = list((build.env_vars if build else None) or [])
        env_vars += list((run.env_vars if run else None) or [])
        if env_vars:
            container["env"] = [
                {"name": str(key), "value": _env_value(value)} for key, value in env_vars
            ]
        return container

    def _note_build(self, build: Build) -> None:
        if build.dockerfile:
            self.note(
                ("build", "dockerfile"),
                "v1.1 builds images with a builder operation; "
                "build this Dockerfile and set `container.image` yourself",
            )
        if build.build_steps:
            self.note(
                ("build", "build_steps"),
                "build steps are not run by v1.1; bake them into "
                "the image (or add a `build` section with a builder component)",
            )
        build_job = build.ref is not None and not build.image and not build.dockerfile
        for key in ("context", "lang_env", "commit", "branch", "ref", "nocache", "backend"):
            if getattr(build, key) is not None:
                self.note(("build", key), _BUILD_JOB if build_job and key == "ref" else _DROPPED)
        if build.env_vars:
            self.note(("build", "env_vars"), "set as `container.env` at run time")

    def _cmd(self, cmd: str | list[str] | IfCmd) -> str:
        if isinstance(cmd, IfCmd):
            return self._if_cmd(cmd)
        commands = [cmd] if isinstance(cmd, str) else list(cmd)
        cleaned: list[str] = []
        for command in commands:
            text = command.strip()
            # A plain multi-line YAML scalar folds `\`-continued lines into `... \ --flag`,
            # which bash would read as an escaped space glued to the next argument.
            fixed = re.sub(r"\s\\\s+", " ", text)
            if fixed != text:
                self.note(
                    ("run", "cmd"),
                    "removed the ` \\ ` line continuations that YAML folded into the command",
                )
            cleaned.append(fixed)
        return " && ".join(cleaned)

    def _if_cmd(self, cmd: IfCmd) -> str:
        """The ``if`` operator as one Jinja template: v1.1 renders it with the params."""
        operator = cmd.if_
        cond = operator.cond.strip()
        whole = re.fullmatch(r"\{\{(.*)\}\}", cond, flags=re.DOTALL)
        if whole and "{{" not in whole.group(1):
            cond = whole.group(1).strip()  # `{{ lr > 0.1 }}` and `lr > 0.1` mean the same
        text = "{% if " + cond + " %}" + self._cmd(operator.do) + "{% else %}"
        if operator.else_do is not None:
            text += self._cmd(operator.else_do)
        else:
            text += "true"  # nothing to run: succeed
        text += "{% endif %}"
        self.note(
            ("run", "cmd", "if"),
            f"the `if` operator is a Jinja condition over the params: runs `do` when "
            f"`{cond}` holds, else {'`else_do`' if operator.else_do is not None else 'nothing'}",
        )
        return text

    def _pod(
        self, env: PodEnvironment | None, path: Path, *, allow_refs: bool = True
    ) -> tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]:
        """The v1.1 ``environment``, container ``resources`` and ``envFrom`` of a legacy pod."""
        if env is None:
            return {}, {}, []
        out: dict[str, Any] = {}
        if env.labels:
            out["labels"] = {k: str(v) for k, v in env.labels.items()}
        if env.annotations:
            out["annotations"] = {k: str(v) for k, v in env.annotations.items()}
        if env.node_selector:
            out["nodeSelector"] = {k: str(v) for k, v in env.node_selector.items()}
        if env.affinity:
            out["affinity"] = env.affinity
        if env.tolerations:
            out["tolerations"] = env.tolerations
        if env.service_account:
            out["serviceAccountName"] = env.service_account
        if env.image_pull_secrets:
            out["imagePullSecrets"] = list(env.image_pull_secrets)
        resources = self._resources(env.resources, (*path, "resources"))
        env_from: list[dict[str, Any]] = []
        refs = [
            ("secret_refs", env.secret_refs, "secretRef"),
            (
                "config_map_refs" if env.config_map_refs is not None else "configmap_refs",
                env.all_config_map_refs,
                "configMapRef",
            ),
        ]
        for key, names, ref in refs:
            if not names:
                continue
            if allow_refs:
                env_from += [{ref: {"name": name}} for name in names]
                self.note((*path, key), f"exposed as `container.envFrom` {ref}s")
            else:
                self.note((*path, key), "per-replica refs are not supported; dropped")
        for key in ("data_refs", "artifact_refs", "outputs", "persistence"):
            if getattr(env, key) is not None:
                self.note(
                    (*path, key),
                    "no v1.1 equivalent (use connections and init containers); dropped",
                )
        if env.max_restarts is not None and path != ("environment",):
            self.note((*path, "max_restarts"), "per-replica restarts are not supported; dropped")
        if env.index is not None and path == ("environment",):
            self.note((*path, "index"), "only meaningful inside `worker`/`ps` lists; dropped")
        return out, resources, env_from

    def _resources(self, resources: PodResources | None, path: Path) -> dict[str, Any]:
        if resources is None:
            return {}
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        for key, (name, cast) in RESOURCE_NAMES.items():
            item = getattr(resources, key)
            if item is None:
                continue
            if item.the_requests is not None:
                requests[name] = cast(item.the_requests)
            if item.the_limits is not None:
                limits[name] = cast(item.the_limits)
            if key == "tpu":
                self.note(
                    (*path, "tpu"),
                    "mapped to `cloud-tpus.google.com/v2`; check the TPU "
                    "resource name of your cluster",
                )
        out: dict[str, Any] = {}
        if requests:
            out["requests"] = requests
        if limits:
            out["limits"] = limits
        return out


def _env_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
