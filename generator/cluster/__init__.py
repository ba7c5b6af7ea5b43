"""A real control plane for the fleet: server-side dry-run (`validate --dry-run=server`) and a
simulation with simulated nodes (`simulate`). See docs/simulation.md."""
