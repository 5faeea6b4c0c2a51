"""Preparing a job: params, templates, init steps and connections rendered once."""
