"""`simulate`: the fleet on a local control plane with simulated nodes, as plan (plan.py, no API
call) -> drive (drive.py, what the API server served, as data) -> judge (judge.py, pure); run.py
puts them in order (docs/simulation.md)."""
