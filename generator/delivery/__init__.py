"""Delivery: the one kustomize build of a tree, and what is done with built trees (show, diff,
publish to the GitOps repository, git)."""
