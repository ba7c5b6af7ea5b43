"""The command line: one module per command group; main.py is its entry point (`main`, `run`)."""
