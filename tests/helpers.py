"""Small helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

from generator.errors import FindingsError
from generator.findings import Finding
from generator.render.stage import load_and_check


def findings(values_dir: Path) -> list[Finding]:
    """Every finding for a values tree (errors raise inside the pipeline; collect them)."""
    try:
        _, warnings = load_and_check(values_dir)
    except FindingsError as exc:
        return exc.findings
    return warnings


def lines(values_dir: Path) -> list[str]:
    return [f.format() for f in findings(values_dir)]


def codes(values_dir: Path) -> set[str]:
    return {f.code for f in findings(values_dir)}


# ---- small values trees made for one behaviour, and the real CLI ---------------------------

FLEET = """\
name: f
kubernetesVersion: "1.33"
environments: [staging, prod]
git: {repoURL: https://git.example.com/f.git, targetRevision: main}
"""
NVIDIA = "pools:\n  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1, n2]}\n"
TEAM = "quota:\n  nvidia: 4\n"
MINI = {"fleet.yaml": FLEET, "vendors/nvidia.yaml": NVIDIA, "teams/ml.yaml": TEAM}


def tree(root: Path, files: dict[str, str | None] | None = None) -> Path:
    """A values tree under root/values: one NVIDIA vendor (8 GPUs), team `ml`, environments
    staging and prod; `files` adds or replaces files (None removes one of the defaults)."""
    values = root / "values"
    for rel, text in {**MINI, **(files or {})}.items():
        path = values / rel
        if text is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return values


def cli(*args: str) -> tuple[int, str]:
    """The real CLI in-process: (exit code, stdout and stderr)."""
    from click.testing import CliRunner

    from generator.cli import main

    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder (hidden ones too), byte for byte."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def render_refused(values: Path) -> str:
    """Render `values` over a previous output; assert exit 1, a 'nothing written' summary and an
    untouched output folder; return what the CLI printed."""
    out = values.parent / "out"
    for top in ("base", "overlays"):
        (out / top).mkdir(parents=True, exist_ok=True)
        (out / top / "previous.yaml").write_text(f"# previous {top}\n", encoding="utf-8")
    before = snapshot(out)
    code, output = cli("render", "--values", str(values), "--out", str(out))
    assert code == 1, output
    assert "nothing written" in output
    assert snapshot(out) == before
    return output
