"""A fake Kubernetes cluster for the submit tests: kmock's API server emulator, plus a fake
operator that plays the Training Operator's (or the Job controller's) part, plus (for a plain
job's Job) a FAKE KUBELET that really runs the pod's containers as local processes.

This is a fake, said plainly: no Kubernetes API server can run on the machines these tests run
on. kmock serves the real HTTP API paths (create, read, list, delete, pod logs) over loopback,
so the code under test goes through the same prefect-kubernetes credentials and
kubernetes-asyncio calls a cluster would get; what a real cluster adds (pods that really start,
schedulers, the operator's controllers) is played by `FakeOperator`, which only writes the
statuses a real one would write.

`FakeKubelet`, said as plainly: there are no containers here. For each pod of a job's Job it
runs the init containers, then the main container's ``command + args``, as local processes
in turn (the image is not pulled: the command runs with this machine's tools, ``sh``, ``git``
and the test's Python). Absolute pod paths (``/plx-context``, the artifacts store's mount) are
rewritten, in the command, the env values and ``workingDir``, to the same paths under a
temporary directory of that pod, so the context ``emptyDir`` is a real directory its init
containers and main container share; a container without ``workingDir`` runs in the
directory the test gives as its image's WORKDIR. The main container's output (stdout and
stderr together, as ``kubectl logs`` shows it) becomes the pod's log that kmock serves, and
the exit code the pod's and the Job's status. The sh wrapper and the outputs handback are so
really executed, not asserted on.

The kubelet's knobs play the scheduler's part for a job's pods: ``unschedulable`` (an event,
while unset every new pod stays ``Pending`` with the scheduler's ``Unschedulable`` condition,
"0/3 nodes are available: 3 Insufficient nvidia.com/gpu.") and ``preempt`` (how many pods are
preempted before they run: ``Failed`` with the ``DisruptionTarget`` condition). The Job
controller's part follows Kubernetes' rules: a pod failed by a disruption that the Job's
``podFailurePolicy`` ignores is started again without counting; else it counts against
``backoffLimit``, and past it the Job fails.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import kmock

NAMESPACE = "team-a"


def kubeconfig(url: str) -> dict[str, Any]:
    """A kubeconfig whose current context points at ``url``."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": url.rstrip("/")}}],
        "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "tester"}}],
        "current-context": "fake",
    }


def credentials(url: str) -> Any:
    from prefect_kubernetes.credentials import KubernetesClusterConfig, KubernetesCredentials

    return KubernetesCredentials(
        cluster_config=KubernetesClusterConfig(config=kubeconfig(url), context_name="fake")
    )


def _raw(obj: Any) -> dict[str, Any]:
    return json.loads(json.dumps(obj.raw))


def live(k: Any, plural: str) -> list[tuple[Any, str, str]]:
    """The keys of the objects of ``plural`` that exist now (not deleted)."""
    return [
        key
        for key in list(k.objects.keys())
        if key[0].plural == plural and not k.objects[key].deleted
    ]


def ever(k: Any, plural: str) -> list[tuple[Any, str, str]]:
    """The keys of every object of ``plural`` ever created (deleted ones too)."""
    return [key for key in list(k.objects.keys()) if key[0].plural == plural]


_PODS_ROOT: list[Path] = []


def _pods_root() -> Path:
    """One folder per test process for every fake pod's files (a pod's root, as a node's
    disk), removed when the process exits: tests read a pod's files after its cluster closed,
    and no pod's folder is left in the system's temporary folder."""
    if not _PODS_ROOT:
        root = Path(tempfile.mkdtemp(prefix="fake-kubelet-"))
        atexit.register(shutil.rmtree, root, True)
        _PODS_ROOT.append(root)
    return _PODS_ROOT[0]


POD_PATHS = ("/plx-context", "/plx-artifacts-store")
"""Absolute paths a pod sees that the fake kubelet maps into the pod's own directory."""


class FakeKubelet:
    """Runs a pod template's containers as local processes (see the module's docstring)."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.workdir = workdir
        self.logs: dict[str, bytes] = {}
        self.processes: dict[str, asyncio.subprocess.Process] = {}
        self.envs: dict[str, dict[str, str]] = {}
        """The env each pod's main container was given (its ``value`` entries)."""
        self.unschedulable: threading.Event | None = None
        self.preempt = 0

    async def run(self, pod_name: str, spec: dict[str, Any]) -> tuple[int, str]:
        """Run the pod; its main container's exit code and the reason Kubernetes would give."""
        root = Path(tempfile.mkdtemp(prefix=f"{pod_name}-", dir=_pods_root()))

        def mapped(text: str) -> str:
            for prefix in POD_PATHS:
                text = text.replace(prefix, f"{root}{prefix}")
            return text

        for container in [*spec.get("initContainers", []), *spec["containers"][:1]]:
            argv = [
                mapped(str(a)) for a in [*container.get("command", []), *container.get("args", [])]
            ]
            env = dict(os.environ)
            # the image's `python` is the one running the tests (CI does not activate the venv)
            path = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
            env["PATH"] = path.rstrip(os.pathsep)
            for item in container.get("env") or []:
                if "value" in item:
                    env[item["name"]] = mapped(str(item["value"]))
            if container is spec["containers"][0]:
                own = {
                    i["name"]: str(i["value"]) for i in container.get("env") or [] if "value" in i
                }
                self.envs[pod_name] = own
            for mount in container.get("volumeMounts") or []:
                Path(mapped(mount["mountPath"])).mkdir(parents=True, exist_ok=True)
            cwd = mapped(container["workingDir"]) if container.get("workingDir") else None
            process = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd or str(self.workdir or root),
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # its own process group: killed whole, as a pod is
            )
            self.processes[pod_name] = process
            out, _ = await process.communicate()
            code = process.returncode if process.returncode is not None else 1
            if container is spec["containers"][0]:
                self.logs[pod_name] = out
            if code != 0:
                return (code if code > 0 else 128 - code), "Error"
        return 0, "Completed"

    def kill(self, pod_name: str) -> None:
        process = self.processes.get(pod_name)
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)


class FakeOperator:
    """Plays the controllers: for each new training resource or Job it adds the pods a real
    controller would start (labels from the template, the replica index), then writes the
    outcome ``scenario`` asks for into the statuses."""

    def __init__(
        self,
        k: Any,
        scenario: str = "succeed",
        delay: float = 0.3,
        kubelet: FakeKubelet | None = None,
    ) -> None:
        self.k = k
        self.kubelet = kubelet
        self.scenario = scenario
        self.delay = delay
        self.seen: set[Any] = set()
        self.tasks: list[asyncio.Task[None]] = []
        self.pod_ids = itertools.count()

    async def run(self) -> None:
        while True:
            for key in list(self.k.objects.keys()):
                if self.k.objects[key].deleted:
                    continue
                # an object deleted and created again under its name is a new one
                created = (key, sum(v is None for v in self.k.objects[key].history))
                if created in self.seen:
                    continue
                resource, namespace, name = key
                if resource.group == "kubeflow.org":
                    self.seen.add(created)
                    self.tasks.append(asyncio.create_task(self._kubeflow(key, namespace, name)))
                elif resource.plural == "jobs":
                    self.seen.add(created)
                    self.tasks.append(asyncio.create_task(self._job(key, namespace, name)))
            await asyncio.sleep(0.02)

    def _pod(
        self,
        namespace: str,
        name: str,
        labels: dict[str, str],
        container: str,
        annotations: dict[str, str] | None = None,
        spec: dict[str, Any] | None = None,
    ) -> None:
        status = {"phase": "Running"}
        if self.scenario == "image_pull":
            status = {
                "phase": "Pending",
                "containerStatuses": [
                    {
                        "name": container,
                        "state": {
                            "waiting": {
                                "reason": "ErrImagePull",
                                "message": 'pull access denied for "no/such-image"',
                            }
                        },
                    }
                ],
            }
        elif self.scenario == "oom":
            status = {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "name": container,
                        "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
                    }
                ],
            }
        self.k.objects["v1/pods", namespace, name] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": labels,
                "annotations": dict(annotations or {}),
            },
            "spec": {"containers": (spec or {}).get("containers") or [{"name": container}]},
            "status": status,
        }

    async def _kubeflow(self, key: Any, namespace: str, name: str) -> None:
        obj = _raw(self.k.objects[key])
        specs = next(v for k, v in obj["spec"].items() if k.endswith("ReplicaSpecs"))
        for replica_type, group in specs.items():
            template = group["template"]
            container = template["spec"]["containers"][0]["name"]
            for index in range(group.get("replicas", 1)):
                labels = {
                    **template["metadata"]["labels"],
                    "training.kubeflow.org/replica-type": replica_type.lower(),
                    "training.kubeflow.org/replica-index": str(index),
                }
                self._pod(
                    namespace,
                    f"{name}-{replica_type.lower()}-{index}",
                    labels,
                    container,
                    spec=template["spec"],
                )
        await asyncio.sleep(self.delay)
        outcome = {
            "succeed": (
                "Succeeded",
                "JobSucceeded",
                f"{obj['kind']} {name} is successfully completed.",
            ),
            "oom": (
                "Failed",
                "JobFailed",
                f"{obj['kind']} {name} is failed because 1 Master replica(s) failed.",
            ),
        }.get(self.scenario)
        if outcome is None or self.k.objects[key].deleted:
            return  # stays running (cancel, timeout, image pull)
        kind, reason, message = outcome
        self.k.objects[key] = {
            **obj,
            "status": {
                "conditions": [
                    {"type": "Created", "status": "True", "reason": "JobCreated"},
                    {"type": "Running", "status": "False", "reason": "JobRunning"},
                    {"type": kind, "status": "True", "reason": reason, "message": message},
                ]
            },
        }

    async def _job(self, key: Any, namespace: str, name: str) -> None:
        obj = _raw(self.k.objects[key])
        template = obj["spec"]["template"]
        if self.kubelet is not None and "completionMode" not in obj["spec"]:
            await self._kubelet_job(key, namespace, name, obj)
            return
        container = template["spec"]["containers"][0]["name"]
        for index in range(obj["spec"].get("completions", 1)):
            labels = {
                **template["metadata"]["labels"],
                "batch.kubernetes.io/job-completion-index": str(index),
            }
            self._pod(
                namespace,
                f"{name}-{index}-abcde",
                labels,
                container,
                annotations=template["metadata"].get("annotations"),
                spec=template["spec"],
            )
        await asyncio.sleep(self.delay)
        group = template["metadata"]["labels"].get("polyaxon-prefect/replica")
        if self.k.objects[key].deleted or self.scenario != "succeed" or group == "ps":
            return  # parameter servers never finish on their own
        self.k.objects[key] = {
            **obj,
            "status": {"conditions": [{"type": "Complete", "status": "True"}]},
        }

    async def _kubelet_job(self, key: Any, namespace: str, name: str, obj: dict[str, Any]) -> None:
        """A job's Job: its pod really run by the fake kubelet, Pending until it ended (the
        log is then whole when the watcher reads it), then Succeeded or Failed."""
        assert self.kubelet is not None
        kubelet = self.kubelet
        template = obj["spec"]["template"]
        failures = 0
        while True:
            pod = f"{name}-{next(self.pod_ids):05d}"  # each pod its own name, as a Job's
            self.k.objects["v1/pods", namespace, pod] = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod,
                    "namespace": namespace,
                    "labels": template["metadata"]["labels"],
                },
                "spec": template["spec"],
                "status": {"phase": "Pending"},
            }
            self.tasks.append(asyncio.create_task(self._collect(key, ("v1/pods", namespace, pod))))
            await self._schedule(key, ("v1/pods", namespace, pod))
            if self.k.objects[key].deleted:
                return
            if not kubelet.preempt:
                break
            kubelet.preempt -= 1
            kubelet.logs[pod] = b""  # taken away before it ran its command
            self._set_status(("v1/pods", namespace, pod), _PREEMPTED)
            if _ignores_disruptions(obj["spec"]):
                continue  # not counted: the Job starts a new pod
            failures += 1
            if failures > obj["spec"].get("backoffLimit", 6):
                self.k.objects[key] = {**obj, "status": {"conditions": [_BACKOFF_EXCEEDED]}}
                return
        code, reason = await kubelet.run(pod, template["spec"])
        if self.k.objects[key].deleted:
            return
        container = template["spec"]["containers"][0]["name"]
        terminated = {"exitCode": code, "reason": reason}
        self.k.objects["v1/pods", namespace, pod] = {
            **_raw(self.k.objects["v1/pods", namespace, pod]),
            "status": {
                "phase": "Succeeded" if code == 0 else "Failed",
                "containerStatuses": [{"name": container, "state": {"terminated": terminated}}],
            },
        }
        condition = {"type": "Complete", "status": "True"} if code == 0 else _BACKOFF_EXCEEDED
        self.k.objects[key] = {**obj, "status": {"conditions": [condition]}}

    def _set_status(self, pod: tuple[str, str, str], status: dict[str, Any]) -> None:
        self.k.objects[pod] = {**_raw(self.k.objects[pod]), "status": status}

    async def _schedule(self, job: Any, pod: tuple[str, str, str]) -> None:
        """The scheduler's part: the pod stays Pending, unschedulable, while the kubelet's
        ``unschedulable`` event is unset."""
        assert self.kubelet is not None
        held = self.kubelet.unschedulable
        if held is None or held.is_set():
            return
        self._set_status(pod, _UNSCHEDULABLE)
        while not held.is_set() and not self.k.objects[job].deleted:
            await asyncio.sleep(0.02)
        if not self.k.objects[job].deleted:
            self._set_status(pod, {"phase": "Pending"})

    async def _collect(self, job: Any, pod: tuple[str, str, str]) -> None:
        """The garbage collector's part: once the Job is deleted (any propagation policy),
        its pod is killed and deleted too."""
        assert self.kubelet is not None
        while not self.k.objects[job].deleted:
            await asyncio.sleep(0.02)
        self.kubelet.kill(pod[2])
        if not self.k.objects[pod].deleted:
            self.k.objects[pod].delete()


_BACKOFF_EXCEEDED = {
    "type": "Failed",
    "status": "True",
    "reason": "BackoffLimitExceeded",
    "message": "Job has reached the specified backoff limit",
}
GPU_SHORTAGE = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
_UNSCHEDULABLE = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": GPU_SHORTAGE,
        }
    ],
}
_PREEMPTED = {
    "phase": "Failed",
    "reason": "Preempting",
    "message": "Preempted in order to admit critical pod",
    "conditions": [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "default-scheduler: preempting to accommodate a higher priority pod",
        }
    ],
}


def _ignores_disruptions(spec: dict[str, Any]) -> bool:
    """Whether a Job's ``podFailurePolicy`` ignores a pod with the DisruptionTarget condition."""
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        types = {c.get("type") for c in rule.get("onPodConditions") or []}
        if "DisruptionTarget" in types:
            return bool(rule.get("action") == "Ignore")
    return False


DDP_OUTPUTS = {"total": 3.0, "world_size": 3}
"""What examples/distributed/ddp.py logs as outputs with three replicas."""


def _handback_block(k: Any, pod_name: str, outputs: dict[str, Any]) -> str:
    """For a pod the fake operator started (no process runs it) whose command is the handback
    wrapper: the block the wrapper would print after a command that logged ``outputs``."""
    for key in list(k.objects.keys()):
        if key[0].plural != "pods" or key[2] != pod_name or k.objects[key].deleted:
            continue
        containers = _raw(k.objects[key]).get("spec", {}).get("containers") or [{}]
        command = containers[0].get("command") or []
        if command[:2] == ["sh", "-c"] and command[3:4] == ["plx-handback"]:
            marker, uuid = command[5], command[6]
            return (
                f"{marker} begin {uuid}\n{marker} outputs {json.dumps(outputs)}\n{marker} end 0\n"
            )
    return ""


@contextlib.asynccontextmanager
async def fake_cluster(
    scenario: str = "succeed",
    kubelet: FakeKubelet | None = None,
    main_outputs: dict[str, Any] | None = None,
) -> AsyncIterator[Any]:
    """The emulator on a loopback port, pod logs that name their pod (or, with a ``kubelet``,
    the logs its pods really wrote), and the fake operator. A pod the operator starts without
    running it ends its log with the handback block of ``main_outputs`` (default: what the
    distributed example's main replica logs) when its command is the wrapper."""
    main_outputs = DDP_OUTPUTS if main_outputs is None else main_outputs
    async with kmock.KubernetesEmulator() as k, kmock.Server(k):

        def log(request: Any) -> bytes:
            if kubelet is not None and request.name in kubelet.logs:
                return kubelet.logs[request.name]
            text = f"hello from {request.name}\nstep 1 loss=0.5\n"
            return (text + _handback_block(k, request.name, main_outputs)).encode()

        k["get", kmock.resource("v1/pods"), kmock.subresource("log")] << log
        fake = FakeOperator(k, scenario, kubelet=kubelet)
        operator = asyncio.create_task(fake.run())
        try:
            yield k
        finally:
            operator.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await operator
            if kubelet is not None:  # no process outlives the cluster, nor its pipes
                for name in list(kubelet.processes):
                    kubelet.kill(name)
                running = [t for t in fake.tasks if not t.done()]
                if running:  # the pods' tasks end once their process has (its pipes read)
                    await asyncio.wait(running, timeout=5)
                for task in fake.tasks:
                    task.cancel()
                await asyncio.gather(*fake.tasks, return_exceptions=True)
