"""A stand-in for GPU work: records what GPUs it was shown and when it held them, then sleeps.

Usage: gpu_script.py MARKS_DIR SECONDS [fail-like-cuda]
"""

import json
import os
import sys
import time
import uuid
from pathlib import Path

marks, seconds = Path(sys.argv[1]), float(sys.argv[2])
start = time.time()
names = ("CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LOCAL_RANK", "LOCAL_WORLD_SIZE")
names += ("GROUP_RANK", "ROLE_RANK", "ROLE_WORLD_SIZE", "RANK", "WORLD_SIZE")
seen = {name: os.environ.get(name) for name in names}
time.sleep(seconds)
marks.mkdir(parents=True, exist_ok=True)
record = {**seen, "start": start, "end": time.time(), "pid": os.getpid()}
(marks / f"{uuid.uuid4().hex}.json").write_text(json.dumps(record))
if sys.argv[3:] == ["fail-like-cuda"]:
    raise RuntimeError("No CUDA GPUs are available")
