"""Framework integrations of Polyaxon's tracking (Keras, PyTorch Lightning, TensorBoard)."""
