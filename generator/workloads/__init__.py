"""Team workloads: values model (model.py), migration phases (phases.py), device usage against
quotas and capacity (usage.py), and their checks (checks.py). The objects are built by
generator/builders/workloads.py."""
