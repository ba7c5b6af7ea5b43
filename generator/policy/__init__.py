"""Policy: every check on resolved values and every rule on built objects, listed in one explicit
registry (`registry.py`); nothing registers itself by being imported."""
