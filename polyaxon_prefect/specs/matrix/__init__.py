"""``matrix``: the seven matrix kinds, their 16 hyper-parameter kinds, early stopping."""
