"""Typed inputs and outputs, the IO type language, and params checked against them."""
