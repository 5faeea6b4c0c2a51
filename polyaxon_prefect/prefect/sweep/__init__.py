"""A matrix operation as a sweep of child flow runs: ask, launch, watch, tell."""
