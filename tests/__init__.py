"""The tests, laid out like the package they test.

tests/<package>/test_<module>.py holds the tests of generator/<package>/<module>.py (values,
workloads, policy, builders, builders/monitoring, render, validate, validate/stages, delivery,
reporters, cluster, fleetreport, toolchain); tests/cli/ the journeys through the CLI, tests/e2e/
the whole pipeline (every unit built by kustomize, property-based runs), tests/project/ the
repository itself (linters, pre-commit hooks, GitHub workflows).

Shared code: conftest.py (pytest fixtures), fixtures.py (helpers: the values-tree builder, the
CLI runner, kustomize build, findings), example.py (what the tests know about the example fleet
under values/), repos.py (real git repositories) and browser.py (headless Chromium).
"""
