"""Polyaxon v0's distributed PyTorch recipe: roles from `get_cluster_def`/`get_task_info`, the
master logs (`is_master`), gloo over the replica env the runtime gives each replica."""

import json

import torch
import torch.distributed as dist
from polyaxon_client.tracking import Experiment, get_cluster_def, get_task_info, is_master

cluster, task = get_cluster_def(), get_task_info()
dist.init_process_group("gloo")  # MASTER_ADDR/MASTER_PORT/RANK/WORLD_SIZE from the env
world = len(cluster["master"]) + len(cluster["worker"])
assert dist.get_world_size() == world
value = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(value)
print(json.dumps({"task": task, "master": is_master(), "sum": value.item()}), flush=True)
if is_master():
    Experiment().log_metrics(world=world, sum=value.item())
dist.destroy_process_group()
