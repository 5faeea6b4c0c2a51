"""Processes a run starts, and the guarantee that none outlives it."""
