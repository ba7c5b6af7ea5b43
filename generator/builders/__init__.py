"""Object builders: one module per kind of output, each `build(view) -> list[Component]`; every
builder is listed, in order, in `fleet.py` (BUILDERS)."""
