"""A PyTorch DDP all-reduce: every replica contributes its rank + 1, all see the sum.

Launched once per replica by the pytorchjob's operator contract (``MASTER_ADDR``,
``MASTER_PORT``, ``WORLD_SIZE``, ``RANK``); locally, polyaxon-prefect starts one process per
replica on loopback with the same variables.
"""

import os

import torch
import torch.distributed as dist

from polyaxon_prefect import tracking

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
print(
    f"rank {rank} of {world} on {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}: "
    f"sum {value.item()}"
)
tracking.log_outputs(total=value.item(), world_size=world)
dist.destroy_process_group()
