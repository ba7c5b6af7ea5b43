"""Render and validate GitOps manifests for Kubernetes fleets that mix accelerator vendors."""

__version__ = "0.1.0"
