"""The command line (generator/cli/main.py); `main` and `run` are its entry points."""

from generator.cli.main import main, run

__all__ = ["main", "run"]
