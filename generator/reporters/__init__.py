"""Reporters: how findings, diffs and simulations are printed. Nothing below this layer prints."""
