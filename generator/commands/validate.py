"""`validate`'s core: the validate run on what is committed, then (--dry-run=server) every unit
applied with dry-run on an API server, then the findings of a sum anchored at the values lines a
change made (--changed-since); one result for the reporters."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from generator.cluster import dryrun
from generator.commands import EnsureTools
from generator.delivery.changes import changed_lines
from generator.findings import Finding, anchor_at_changes, sorted_findings
from generator.toolchain import registry
from generator.validate.progress import Progress
from generator.validate.run import ValidateOptions, ValidateResult
from generator.validate.run import validate as run_validate


@dataclass(frozen=True)
class DryRun:
    """Where --dry-run=server applies every unit: a throwaway local control plane (no
    kubeconfig), or the cluster of `kubeconfig` (nothing changes there)."""

    kubeconfig: Path | None = None
    context: str | None = None

    def tools(self, minor: str = registry.DEFAULT_MINOR) -> tuple[str, ...]:
        """A throwaway local control plane of `minor`, or kubectl (its proxy reaches the user's
        cluster)."""
        return registry.control_plane_tools(minor) if self.kubeconfig is None else ("kubectl",)


@dataclass(frozen=True)
class ValidateCommand:
    validate: ValidateOptions
    dry_run: DryRun | None = None
    changed_since: str | None = None  # a pull request's base: anchor sums at its changes


@dataclass
class ValidateOutcome:
    result: ValidateResult
    findings: list[Finding]  # validate's, the dry-run's, anchored at the changes: sorted
    stats: dict[str, object]


def stats(result: ValidateResult) -> dict[str, object]:
    """The counts a validate report states (render --validate's too)."""
    out: dict[str, object] = {
        "units": result.units,
        "objects": result.objects,
        "cached units": result.cached_units,
    }
    not_run = list(result.not_run)
    if result.skipped:
        plural = "s" if len(result.skipped) > 1 else ""
        not_run.append(f"the {', '.join(result.skipped)} stage{plural} (--skip)")
    if not_run:
        out["not run"] = "; ".join(not_run)
    return out


def validate(cmd: ValidateCommand, progress: Progress, ensure: EnsureTools) -> ValidateOutcome:
    opts = cmd.validate
    # Read before the run: a ref that names no commit is a usage error, not a late surprise.
    changed = changed_lines(opts.values_dir, cmd.changed_since) if cmd.changed_since else None
    result = run_validate(opts, progress)
    done = ValidateOutcome(result, list(result.findings), stats(result))
    if cmd.dry_run is not None and not result.not_run:  # nothing to apply when not rendered
        where = cmd.dry_run
        if where.kubeconfig is not None:
            ensure("validate --dry-run=server", where.tools())
        dry = dryrun.dry_run(
            opts.values_dir,
            opts.env,
            kubeconfig=where.kubeconfig,
            context=where.context,
            # The local plane of each cluster's minor, built when first needed.
            prepare=lambda minor: ensure("validate --dry-run=server", where.tools(minor)),
        )
        done.findings = sorted_findings(done.findings + dry.findings)
        done.stats["dry-run objects"] = dry.objects
        if dry.versions:  # which Kubernetes each cluster was proven on
            done.stats["dry-run on"] = ", ".join(sorted(set(dry.versions.values())))
        if dry.skipped:
            done.stats["dry-run skipped"] = dry.skipped
        result.timings.update({f"dry-run {k}": v for k, v in dry.timings.items()})
    if changed is not None:
        done.findings = sorted_findings(anchor_at_changes(done.findings, changed))
    return done
