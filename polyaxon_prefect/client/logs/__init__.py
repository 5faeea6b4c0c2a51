"""A run's log lines (``logs``, ``logs -f``): read from Prefect's REST API, selected and printed,
one code path of the thin client and the flow layer.
"""
