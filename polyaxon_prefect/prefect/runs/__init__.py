"""Runs read back from Prefect and their files: records, logs, stop, restart."""
