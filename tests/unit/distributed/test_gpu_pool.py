"""The GPU pool's pure decisions: devices, sharing, all-or-none choice, refusal, reasons."""

from __future__ import annotations

import pytest

from polyaxon_prefect.distributed import (
    Slot,
    capacity_problem,
    choose,
    looks_for_cuda,
    machine_gpus,
    parse_nvidia_smi,
    sharing,
    slots,
    visible_env,
    wait_reason,
)

SMI = """\
GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaa)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-bbb)
  MIG 3g.20gb     Device  0: (UUID: MIG-111)
  MIG 3g.20gb     Device  1: (UUID: MIG-222)
GPU 2: NVIDIA H100 80GB HBM3 (UUID: GPU-ccc)
"""


def test_nvidia_smi_gpus_and_mig_instances_are_devices():
    assert parse_nvidia_smi(SMI) == ["0", "MIG-111", "MIG-222", "2"]
    assert parse_nvidia_smi("") == []


def test_cuda_visible_devices_wins_over_nvidia_smi_and_repeats_count_once():
    assert machine_gpus("2,3", SMI) == ["2", "3"]
    assert machine_gpus("0,0", None) == ["0"]
    assert machine_gpus("", SMI) == []
    assert machine_gpus(None, SMI) == ["0", "MIG-111", "MIG-222", "2"]


def test_cuda_visible_devices_ends_at_minus_one_or_nodevfiles_as_cuda_reads_it():
    assert machine_gpus("-1", SMI) == []
    assert machine_gpus("NoDevFiles", SMI) == []
    assert machine_gpus("1,-1,2", SMI) == ["1"]


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "17", "100000", "9" * 20])
def test_sharing_must_be_a_whole_number_of_ops_per_gpu(value: str):
    with pytest.raises(ValueError, match="POLYAXON_PREFECT_GPU_SHARING"):
        sharing(value)


def test_sharing_defaults_to_one():
    assert sharing(None) == sharing("") == 1
    assert sharing("3") == 3
    assert sharing("16") == 16  # the most: each share is a lock file an op opens


def test_slots_spread_over_gpus_before_sharing_one():
    assert slots(["0", "1"], 2) == [Slot(0, "0"), Slot(0, "1"), Slot(1, "0"), Slot(1, "1")]


def test_choose_takes_every_request_or_nothing():
    free = slots(["0", "1"], 1)
    assert choose(free, [1, 1]) == [[Slot(0, "0")], [Slot(0, "1")]]
    assert choose(free[:1], [1, 1]) is None  # no half gang
    assert choose(free, [2]) == [[Slot(0, "0"), Slot(0, "1")]]
    assert choose(free, [0]) == [[]]


def test_one_process_never_gets_one_gpu_twice_but_replicas_share_under_sharing():
    one_gpu_two_shares = slots(["0"], 2)
    assert choose(one_gpu_two_shares, [2]) is None
    assert choose(one_gpu_two_shares, [1, 1]) == [[Slot(0, "0")], [Slot(1, "0")]]


def test_choose_spreads_an_op_before_doubling_up():
    free = slots(["0", "1"], 2)
    chosen = choose(free, [1, 1])
    assert chosen is not None
    assert {slot.gpu for group in chosen for slot in group} == {"0", "1"}


def test_a_request_larger_than_the_machine_is_a_located_problem_with_the_sharing_hint():
    path = ("component", "run", "container", "resources")
    assert capacity_problem([1], ["0"], 1, path) is None
    assert capacity_problem([0, 0], [], 1, path) is None
    problem = capacity_problem([1, 1, 1], ["0", "1"], 1, path)
    assert problem is not None and problem.rule == "not_enough_gpus"
    assert problem.path == path
    assert "this op asks for 3 GPU(s)" in problem.message and "has 2" in problem.message
    assert "POLYAXON_PREFECT_GPU_SHARING" in (problem.hint or "")
    assert "NCCL" in (problem.hint or "")
    assert capacity_problem([1, 1, 1], ["0", "1"], 2, path) is None
    named = capacity_problem([1, 2], ["0", "1"], 1, path, ["master-0", "worker-0"])
    assert named is not None
    assert named.message.startswith("the replicas ask for 3 GPU(s) (master-0: 1, worker-0: 2)")
    too_big = capacity_problem([3], ["0", "1"], 4, path)
    assert too_big is not None and "cluster" in (too_big.hint or "")


def test_wait_reason_names_the_gpus_held_and_their_holders():
    held = {Slot(0, "0"): "train (1234abcd)", Slot(0, "1"): "eval (5678ef90)"}
    assert wait_reason([1], held) == (
        "waiting for 1 GPU: 2 held by run train (1234abcd), run eval (5678ef90)"
    )
    assert wait_reason([1, 1], {Slot(0, "0"): "a"}) == "waiting for 2 GPUs: 1 held by run a"


def test_visible_env_shows_exactly_the_devices():
    assert visible_env(["0", "1"]) == {
        "CUDA_VISIBLE_DEVICES": "0,1",
        "NVIDIA_VISIBLE_DEVICES": "0,1",
    }
    assert visible_env([]) == {"CUDA_VISIBLE_DEVICES": "", "NVIDIA_VISIBLE_DEVICES": "void"}


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: No CUDA GPUs are available",
        "ValueError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
        "torch.distributed.DistBackendError: NCCL error in: ...",
    ],
)
def test_cuda_looking_lines_are_recognised(line: str):
    assert looks_for_cuda(["x", line])


def test_other_failures_get_no_gpu_hint():
    assert not looks_for_cuda(["ZeroDivisionError: division by zero"])
