"""polyaxon-prefect's stand-in for Polyaxon's ``polyaxon`` package (tracking only).

On a job's ``PYTHONPATH`` only when the job's Python has no real ``polyaxon``; see
``_polyaxon_prefect_compat`` beside this package for what each call does here.
"""

__version__ = "1.0.0+polyaxon-prefect-compat"
POLYAXON_PREFECT_COMPAT = True
