"""Render and validate GitOps manifests for Kubernetes fleets that mix accelerator vendors."""

__version__ = "0.1.0"

# How the user runs this program: messages that tell them what to run next name it. The installed
# console script is `accel-gitops`; render.py in a clone sets its own (`set_command`).
_command = "accel-gitops"


def set_command(prefix: str) -> None:
    """Name the program as the user invokes it (e.g. ``python render.py``) in every message."""
    global _command
    _command = prefix


def command(args: str = "") -> str:
    """The command line a message tells the user to run: ``accel-gitops render``."""
    return f"{_command} {args}".rstrip()
