"""Ops submitted to Kubernetes through Prefect: executors, GPU slots and waits."""
