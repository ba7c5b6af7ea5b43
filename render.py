#!/usr/bin/env python3
"""Entry point: `python render.py --help`."""

from generator.cli.main import run

if __name__ == "__main__":
    run("python render.py")
