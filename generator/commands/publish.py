"""`publish`'s core: the render of the values, checked by validate's every check on the tree as
Argo CD will read it, committed to the GitOps repository. delivery/publish.py takes the check as
an argument, so delivery and validate stay independent of each other; this core hands it
validate's."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.delivery import publish as publishing
from generator.findings import Finding
from generator.validate.run import ValidateOptions
from generator.validate.run import validate as run_validate


@dataclass(frozen=True)
class PublishCommand:
    publish: publishing.PublishOptions
    cache_dir: Path | None = None  # validate's cache


def validate_check(opts: publishing.PublishOptions, cache_dir: Path | None) -> publishing.Check:
    """validate's every check of the tree about to be pushed, as Argo CD will read it (no drift:
    the tree is the fresh render)."""

    def check(committed: Path) -> list[Finding]:
        checks = ValidateOptions(
            opts.values_dir,
            cache_dir=cache_dir,
            committed=committed,
            drift=False,
            program=opts.program,
        )
        return run_validate(checks).findings

    return check


def publish(cmd: PublishCommand) -> publishing.PublishResult:
    return publishing.publish(cmd.publish, validate_check(cmd.publish, cmd.cache_dir))
