"""`render --validate`'s core: the render just written handed to validate, which uses its values,
findings and trees instead of loading, checking and rendering the same bytes again."""

from __future__ import annotations

from generator import Program
from generator.commands import EnsureTools
from generator.commands.validate import ValidateCommand, ValidateOutcome, validate
from generator.render.stage import RenderOptions, RenderResult
from generator.validate.progress import Progress
from generator.validate.run import Prepared, ValidateOptions


def validate_render(
    opts: RenderOptions,
    result: RenderResult,
    program: Program,
    progress: Progress,
    ensure: EnsureTools,
) -> ValidateOutcome:
    """Validate what `render` with `opts` wrote (`result`), as `validate` does."""
    prepared = Prepared.of(result)
    checks = ValidateOptions(
        opts.values_dir,
        opts.env,
        opts.cache_dir,
        committed=opts.out_dir,
        prepared=prepared,
        program=program,
    )
    return validate(ValidateCommand(checks), progress, ensure)
