"""The fleet on a real cluster: server-side dry-run (`validate --dry-run=server`), preflight, the
units as Argo CD applies them, and the fleet's rules for the local control plane (plane.py). The
processes are generator/controlplane's; the simulation is generator/simulate. See
docs/simulation.md."""
