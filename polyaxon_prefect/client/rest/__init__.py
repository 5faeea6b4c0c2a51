"""Prefect's REST API without Prefect: the calls the readers make, sent over the standard
library's HTTP, and what the thin client needs of the API.
"""
