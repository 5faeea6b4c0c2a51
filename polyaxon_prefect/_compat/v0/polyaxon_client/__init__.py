"""polyaxon-prefect's stand-in for polyaxon-client v0.5/0.6 (``polyaxon_client.tracking``).

On a job's ``PYTHONPATH`` only when the job's Python has no real ``polyaxon_client``.
"""

__version__ = "0.6.0+polyaxon-prefect-compat"
POLYAXON_PREFECT_COMPAT = True
