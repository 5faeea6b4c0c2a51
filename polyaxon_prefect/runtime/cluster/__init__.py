"""Ops prepared for a Kubernetes backend, and what their pods hand back."""
