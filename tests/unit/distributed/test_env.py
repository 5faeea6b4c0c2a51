"""The environment contract of each kind, with loopback and in-cluster addresses."""

from __future__ import annotations

import json

import pytest

from polyaxon_prefect.distributed import (
    ENV,
    loopback_cluster,
    mpi_hostfile,
    named_cluster,
    plan_replicas,
    replica_env,
    service_cluster,
    torchrun_env,
)
from polyaxon_prefect.specs import (
    KUBEFLOW_KINDS,
    MPIJob,
    MXJob,
    PaddleJob,
    PytorchJob,
    TFJob,
    XGBoostJob,
)

C = {"container": {"command": ["x"]}}


def _group(n: int) -> dict:
    return {"replicas": n, **C}


def _envs(run, ports=None) -> dict[str, dict[str, str]]:
    plan = plan_replicas(run)
    cluster = loopback_cluster(plan, ports or [5000 + i for i in range(plan.size)], "job1")
    return {r.name: replica_env(plan, r, cluster) for r in plan.replicas}


def test_every_kubeflow_kind_has_an_env_builder() -> None:
    assert set(ENV) == KUBEFLOW_KINDS


def test_tf_config_lists_every_replica_type_and_the_task() -> None:
    envs = _envs(TFJob.model_validate({"chief": _group(1), "ps": _group(1), "worker": _group(2)}))
    config = json.loads(envs["worker-1"]["TF_CONFIG"])
    assert config == {
        "cluster": {
            "chief": ["127.0.0.1:5000"],
            "ps": ["127.0.0.1:5001"],
            "worker": ["127.0.0.1:5002", "127.0.0.1:5003"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }
    assert json.loads(envs["chief-0"]["TF_CONFIG"])["task"] == {"type": "chief", "index": 0}


def test_tf_config_in_a_cluster_uses_the_operators_dns_names() -> None:
    plan = plan_replicas(TFJob.model_validate({"chief": _group(1), "worker": _group(2)}))
    cluster = service_cluster(plan, "dist-mnist", "ml")
    config = json.loads(replica_env(plan, plan.of_type("worker")[1], cluster)["TF_CONFIG"])
    assert config["cluster"]["worker"] == [
        "dist-mnist-worker-0.ml.svc:2222",
        "dist-mnist-worker-1.ml.svc:2222",
    ]


def test_a_single_tf_replica_gets_no_tf_config() -> None:
    assert _envs(TFJob.model_validate({"worker": _group(1)})) == {"worker-0": {}}


def test_pytorch_master_and_workers() -> None:
    envs = _envs(PytorchJob.model_validate({"master": _group(1), "worker": _group(2)}))
    for rank, name in enumerate(["master-0", "worker-0", "worker-1"]):
        env = envs[name]
        assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "127.0.0.1"
        assert env["MASTER_PORT"] == env["PET_MASTER_PORT"] == "5000"
        assert env["WORLD_SIZE"] == "3" and env["PET_NNODES"] == "3"
        assert env["RANK"] == env["PET_NODE_RANK"] == str(rank)
        assert env["PYTHONUNBUFFERED"] == "1"
        assert "PET_NPROC_PER_NODE" not in env


def test_pytorch_nproc_per_node_multiplies_the_world_size() -> None:
    run = PytorchJob.model_validate({"nProcPerNode": 4, "master": _group(1), "worker": _group(1)})
    env = _envs(run)["worker-0"]
    assert (env["WORLD_SIZE"], env["PET_NPROC_PER_NODE"], env["PET_NNODES"]) == ("8", "4", "2")


def test_pytorch_elastic_rendezvous() -> None:
    run = PytorchJob.model_validate(
        {
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 3, "maxRestarts": 2},
            "worker": _group(2),
        }
    )
    env = _envs(run)["worker-1"]
    assert env["PET_NNODES"] == "1:3"
    assert env["PET_RDZV_BACKEND"] == "c10d"
    assert env["PET_RDZV_ENDPOINT"] == "127.0.0.1:5000"
    assert env["PET_RDZV_ID"] == "job1"
    assert env["PET_MAX_RESTARTS"] == "2"


def test_mxnet_dmlc_variables() -> None:
    run = MXJob.model_validate({"scheduler": _group(1), "server": _group(2), "worker": _group(3)})
    envs = _envs(run)
    worker = envs["worker-2"]
    assert worker["DMLC_PS_ROOT_URI"] == "127.0.0.1" and worker["DMLC_PS_ROOT_PORT"] == "5000"
    assert (worker["DMLC_NUM_SERVER"], worker["DMLC_NUM_WORKER"]) == ("2", "3")
    assert worker["DMLC_ROLE"] == "worker" and worker["DMLC_WORKER_ID"] == "2"
    assert envs["server-1"]["DMLC_ROLE"] == "server" and envs["server-1"]["DMLC_SERVER_ID"] == "1"
    assert envs["scheduler-0"]["DMLC_ROLE"] == "scheduler"
    assert "DMLC_USE_KUBERNETES" not in worker
    assert json.loads(worker["MX_CONFIG"])["task"] == {"type": "worker", "index": 2}


def test_mxnet_in_a_cluster_says_so() -> None:
    plan = plan_replicas(MXJob.model_validate({"scheduler": _group(1), "worker": _group(1)}))
    env = replica_env(plan, plan.main, service_cluster(plan, "mx", "ns"))
    assert env["DMLC_USE_KUBERNETES"] == "1"
    assert env["DMLC_PS_ROOT_URI"] == "mx-scheduler-0.ns.svc"
    assert env["DMLC_PS_ROOT_PORT"] == "9091"


def test_xgboost_variables() -> None:
    envs = _envs(XGBoostJob.model_validate({"master": _group(1), "worker": _group(2)}))
    worker = envs["worker-1"]
    assert worker["MASTER_ADDR"] == "127.0.0.1" and worker["MASTER_PORT"] == "5000"
    assert (worker["WORLD_SIZE"], worker["RANK"]) == ("3", "2")
    assert worker["WORKER_PORT"] == "5002"
    assert worker["WORKER_ADDRS"] == "127.0.0.1,127.0.0.1"


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        (
            {"master": _group(1), "worker": _group(2)},
            {"PADDLE_TRAINER_NUM": "1", "PADDLE_NNODES": "3", "PADDLE_MASTER": "127.0.0.1:5000"},
        ),
        ({"worker": _group(2)}, {"PADDLE_NNODES": "2", "PADDLE_MASTER": "127.0.0.1:5000"}),
    ],
)
def test_paddle_variables(groups: dict, expected: dict) -> None:
    """As the operator's ``paddlepaddle/envvar.go`` (release-1.9) sets them: each pod is one
    trainer or one server in parameter-server mode, and no ``POD_IP``."""
    envs = _envs(PaddleJob.model_validate(groups))
    env = envs["worker-1"]
    assert env["PADDLE_JOB_ID"] == "job1" and "POD_IP" not in env
    assert expected.items() <= env.items()
    assert "PADDLE_SERVER_NUM" not in env
    if "master" in groups:
        assert envs["master-0"]["PADDLE_SERVER_NUM"] == "1"
        assert "PADDLE_TRAINER_NUM" not in envs["master-0"]


def test_mpi_hostfile_on_one_machine_and_in_a_cluster() -> None:
    run = MPIJob.model_validate({"slotsPerWorker": 2, "launcher": _group(1), "worker": _group(3)})
    plan = plan_replicas(run)
    local = loopback_cluster(plan, [1, 2, 3, 4], "j")
    assert mpi_hostfile(plan, local) == "127.0.0.1 slots=6\n"
    remote = service_cluster(plan, "mpi", "ns")
    assert mpi_hostfile(plan, remote).splitlines() == [
        "mpi-worker-0.ns.svc slots=2",
        "mpi-worker-1.ns.svc slots=2",
        "mpi-worker-2.ns.svc slots=2",
    ]


def test_mpi_launcher_env_points_at_the_hostfile() -> None:
    plan = plan_replicas(MPIJob.model_validate({"launcher": _group(1), "worker": _group(1)}))
    cluster = loopback_cluster(plan, [1, 2], "j")
    assert replica_env(plan, plan.main, cluster) == {}
    with_file = type(cluster)(cluster.hosts, cluster.ports, "j", hostfile="/tmp/hostfile")
    env = replica_env(plan, plan.main, with_file)
    assert env == {"OMPI_MCA_orte_default_hostfile": "/tmp/hostfile"}


def test_loopback_needs_one_port_per_replica() -> None:
    plan = plan_replicas(TFJob.model_validate({"worker": _group(2)}))
    with pytest.raises(ValueError, match="2 replicas need 2 ports"):
        loopback_cluster(plan, [1], "j")


def test_a_local_pytorch_replica_gets_torchruns_worker_variables() -> None:
    plan = plan_replicas(PytorchJob.model_validate({"master": _group(1), "worker": _group(2)}))
    for rank, replica in enumerate(plan.replicas):
        env = torchrun_env(plan, replica)
        assert (env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("0", "1")
        assert env["GROUP_RANK"] == env["ROLE_RANK"] == str(rank)
        assert env["GROUP_WORLD_SIZE"] == env["ROLE_WORLD_SIZE"] == "3"
    per_node = PytorchJob.model_validate({"nProcPerNode": 4, "master": _group(1)})
    plan = plan_replicas(per_node)
    assert torchrun_env(plan, plan.main)["ROLE_WORLD_SIZE"] == "4"
    tf = plan_replicas(TFJob.model_validate({"worker": _group(1)}))
    assert torchrun_env(tf, tf.main) == {}


def test_named_cluster_puts_each_replica_at_its_host_on_the_kinds_port() -> None:
    plan = plan_replicas(PytorchJob.model_validate({"master": _group(1), "worker": _group(2)}))
    hosts = {r.name: f"run-{r.name}" for r in plan.replicas}
    cluster = named_cluster(plan, hosts, "job1")
    env = replica_env(plan, plan.of_type("worker")[1], cluster)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"]) == ("run-master-0", "23456", "2")
    tf = plan_replicas(TFJob.model_validate({"chief": _group(1), "worker": _group(1)}))
    tf_cluster = named_cluster(tf, {r.name: r.name for r in tf.replicas}, "job1")
    config = json.loads(replica_env(tf, tf.main, tf_cluster)["TF_CONFIG"])
    assert config["cluster"] == {"chief": ["chief-0:2222"], "worker": ["worker-0:2222"]}
    mpi = plan_replicas(MPIJob.model_validate({"launcher": _group(1), "worker": _group(2)}))
    mpi_cluster = named_cluster(mpi, {r.name: f"h-{r.name}" for r in mpi.replicas}, "job1")
    assert mpi_hostfile(mpi, mpi_cluster) == "h-worker-0 slots=1\nh-worker-1 slots=1\n"
