"""`simulate`: the fleet on a local control plane with simulated nodes (docs/simulation.md)."""
