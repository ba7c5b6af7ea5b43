"""Every module that registers checks is imported here, so the registry is complete."""

from __future__ import annotations

from . import checks
from .checks import REGISTRY, run_checks
from .workloads import checks as workload_checks

__all__ = ["REGISTRY", "checks", "run_checks", "workload_checks"]
