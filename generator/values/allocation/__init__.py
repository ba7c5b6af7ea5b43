"""Allocation modes (docs/allocation.md): one module per way a vendor's devices reach pods besides
whole devices (timeslicing, mps, mig, vnpu, dra), each holding its schema fragment, its
resolution, what it gives the device plugin and its words; registry.py lists them, base.py is
what they share. Nothing outside this package branches on a mode's name
(tests/project/test_allocation_modes.py)."""
