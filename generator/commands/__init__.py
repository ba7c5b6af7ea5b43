"""The cores of the commands that compose stage packages: each takes a frozen options object,
runs what the command runs (validate then a dry-run; a render handed to validate; the simulation
on its control plane; a cluster's preflight; a diff between environments or refs) and returns a
result. A core never prints and never exits: the command line (generator/cli) parses the flags
into the options, calls the core and reports its result (generator/reporters).

They sit above validate, delivery, cluster and plan, which stay independent of each other, and
below the reporters, which format their results. One small module per command, so a stage
package that moves changes the imports of the cores that use it and nothing in the CLI.
"""

from __future__ import annotations

from collections.abc import Callable

EnsureTools = Callable[[str, tuple[str, ...]], None]
"""Build the tools a command needs (second argument) that are missing, naming the command
(first) in what it says: the command line passes its own, which says so on stderr."""
