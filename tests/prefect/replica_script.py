"""One replica of the distributed tests: checks its operator contract, logs what it saw.

``python replica_script.py MODE [ARG]``; stdlib only except ``ddp`` (torch, gloo, CPU).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from polyaxon_prefect import tracking


def tf() -> None:
    """TF_CONFIG: the whole cluster and this task; the ps never ends by itself."""
    config = json.loads(os.environ["TF_CONFIG"])
    task = config["task"]
    print(f"tf task {task['type']}:{task['index']}", flush=True)
    if task["type"] == "ps":
        time.sleep(60)
    sizes = {kind: len(addresses) for kind, addresses in config["cluster"].items()}
    tracking.log_outputs(task=f"{task['type']}:{task['index']}", cluster=json.dumps(sizes))


def mx() -> None:
    """DMLC_*: the scheduler is the root, counts and roles; server and scheduler wait."""
    env = os.environ
    role = env["DMLC_ROLE"]
    print(f"dmlc role {role} root {env['DMLC_PS_ROOT_URI']}:{env['DMLC_PS_ROOT_PORT']}")
    if role == "server":
        time.sleep(60)
    if role == "scheduler":
        time.sleep(0.5)
    seen = f"{role}/{env['DMLC_NUM_SERVER']}/{env['DMLC_NUM_WORKER']}"
    tracking.log_outputs(task=seen + "/" + env.get("DMLC_WORKER_ID", "-"), cluster="")


def ddp() -> None:
    """A gloo all-reduce of ``rank + 1`` over every replica: the sum is 1 + ... + WORLD_SIZE."""
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo")
    tensor = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(tensor)
    print(f"rank {dist.get_rank()} of {dist.get_world_size()}: {tensor.item()}", flush=True)
    tracking.log_outputs(total=tensor.item(), rank=dist.get_rank())
    dist.destroy_process_group()


def fail(folder: str) -> None:
    """Worker 1 fails once every other replica has recorded its pid (so the test can check
    they are all stopped); they wait."""
    marks = Path(folder)
    if os.environ["RANK"] == "2":
        deadline = time.time() + 60
        while len(list(marks.glob("pid-*"))) < 2 and time.time() < deadline:
            time.sleep(0.05)
        (marks / "failed_at").write_text(str(time.time()))
        print("boom: worker 1 lost its data", file=sys.stderr, flush=True)
        sys.exit(3)
    (marks / f"pid-{os.environ['RANK']}").write_text(str(os.getpid()))
    time.sleep(60)


def echo(value: str) -> None:
    """Every replica logs ``value`` times its rank + 1 (the op's output is rank 0's)."""
    rank = int(os.environ.get("RANK", "0"))  # a plain job has no rank
    print(f"echo {value} from rank {rank}")
    tracking.log_outputs(loss=float(value) * (rank + 1))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"tf": tf, "mx": mx, "ddp": ddp, "fail": fail, "echo": echo}[mode](*args)
