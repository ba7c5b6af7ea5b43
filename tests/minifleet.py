"""Small values trees made for one behaviour each (tmp_path), and reading what they render."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import yaml

from generator.render.stage import RenderOptions, render
from tests.conftest import tool

FLEET = """\
name: mini
kubernetesVersion: "1.33"
environments: [prod]
git: {repoURL: https://git.example.com/mini.git, targetRevision: main}
"""


def tree(root: Path, files: dict[str, str], fleet: str = FLEET) -> Path:
    """Write a values tree: fleet.yaml plus `files` (path relative to values/ -> text)."""
    values_dir = root / "values"
    (values_dir / "vendors").mkdir(parents=True, exist_ok=True)
    (values_dir / "fleet.yaml").write_text(fleet)
    for rel, text in files.items():
        path = values_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return values_dir


def rendered(values_dir: Path, out: Path) -> Path:
    render(RenderOptions(values_dir=values_dir, out_dir=out))
    return out


def build(out: Path, env: str, unit: str) -> list[dict[str, Any]]:
    """What Argo CD applies for one unit: `kustomize build overlays/<env>/<unit>`."""
    proc = subprocess.run(
        [str(tool("kustomize")), "build", str(out / "overlays" / env / unit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return [d for d in yaml.safe_load_all(proc.stdout) if d]


def find(objs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [o for o in objs if o["kind"] == kind and name in (None, o["metadata"]["name"])]
    assert len(found) == 1, f"{kind} {name}: {[o['metadata']['name'] for o in found]}"
    return found[0]


def pod_security(objs: list[dict[str, Any]], level: str = "restricted") -> list[dict[str, Any]]:
    """Every pod template of `objs` checked by Kubernetes' own Pod Security admission code
    (tools/podsecurity) at its namespace's enforce level (`level` where `objs` lack it)."""
    proc = subprocess.run(
        [str(tool("podsecurity")), f"-level={level}"],
        input=yaml.safe_dump_all(objs),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]
