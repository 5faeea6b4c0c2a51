"""The Prefect server a command uses: the local one it starts, and noticing it went away."""
