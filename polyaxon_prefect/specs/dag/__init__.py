"""A DAG's graph (upstreams, cycles, a stable order) and its validation, all at once."""
