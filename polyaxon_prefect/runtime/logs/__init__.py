"""A run's log lines: written, read back, and masked of secrets."""
