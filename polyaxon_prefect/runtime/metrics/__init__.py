"""A run's metric history read back, and written as TensorBoard event files."""
