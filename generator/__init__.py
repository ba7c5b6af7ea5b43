"""Render and validate GitOps manifests for Kubernetes fleets that mix accelerator vendors."""

from dataclasses import dataclass

__version__ = "0.1.0"


@dataclass(frozen=True)
class Program:
    """How the user runs this program, for the messages that tell them what to run next: the
    installed console script (`CONSOLE`), or ``python render.py`` in a clone. The command line
    knows it and hands it down in the options of what it calls; nothing sets it globally."""

    name: str

    def command(self, args: str = "") -> str:
        """The command line a message tells the user to run: ``accel-gitops render``."""
        return f"{self.name} {args}".rstrip()


CONSOLE = Program("accel-gitops")
