"""polyaxon-client v0's framework integrations (Keras)."""
