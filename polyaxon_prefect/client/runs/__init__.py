"""A run read back from Prefect's REST API in Polyaxon's terms (``ls``, ``get``, ``statuses``,
``stop``): the state mapping, its row and record, its report, progress and status history,
and the printers, one code path of the thin client and the flow layer.
"""
