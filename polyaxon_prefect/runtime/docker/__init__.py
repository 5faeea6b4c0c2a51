"""The ``docker`` backend: ops, replicas, services and builds in containers."""
