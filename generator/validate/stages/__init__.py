"""Validate stages: one module per check that runs upstream code on the committed output."""
