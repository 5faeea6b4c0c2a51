"""The Prefect server the thin client asks, found without Prefect: the user's or the profile's,
or this home's background server (its record, leases and sessions' journals), its status, and
``run``'s side of its warm runner.
"""
