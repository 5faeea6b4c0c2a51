"""One module per section of a component or operation (``run``, ``init``, ...)."""
