"""validate: values schema -> render -> kustomize build -> kubeconform -> promtool -> policy."""

from generator.validate.run import Prepared, ValidateOptions, ValidateResult, validate

__all__ = ["Prepared", "ValidateOptions", "ValidateResult", "validate"]
