"""Watching a run as it goes: progress, the terminal's live block, metric charts, MLflow."""
