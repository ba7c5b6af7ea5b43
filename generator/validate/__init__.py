"""validate: values schema -> render -> kustomize build -> kubeconform -> promtool -> policy."""

from .core import ValidateOptions, ValidateResult, validate

__all__ = ["ValidateOptions", "ValidateResult", "validate"]
