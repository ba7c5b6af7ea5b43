"""render's output is incremental and all-or-nothing: a failure at any step of the change
(exception, full disk, read-only folder, SIGKILL) leaves the previous tree byte for byte."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from generator.render import writer as output
from tests.fixtures import cli, render_py, tree

FLEET = """\
name: tiny
kubernetesVersion: "1.33"
environments: [dev]
git:
  repoURL: https://git.example.com/tiny.git
  targetRevision: main
"""
NVIDIA = "pools:\n  - name: a100\n    model: A100\n    devicesPerNode: 4\n    nodes: [n1]\n"


def team(owner: str, nvidia: int) -> str:
    return f"owners: [{owner}@example.com]\nquota:\n  nvidia: {nvidia}\n"


def tiny_values(root: Path) -> Path:
    """Version 1 of a small fleet: teams alpha and beta."""
    files = {
        "vendors/nvidia.yaml": NVIDIA,
        "teams/alpha.yaml": team("alpha", 2),
        "teams/beta.yaml": team("beta", 1),
    }
    return tree(root, files, fleet=FLEET, defaults=False)


def to_version_2(values: Path) -> None:
    """A change that takes every step: alpha's files change, beta's go (and its folders), gamma's
    come (in new folders)."""
    (values / "teams/alpha.yaml").write_text(team("alpha", 3))
    (values / "teams/beta.yaml").unlink()
    (values / "teams/gamma.yaml").write_text(team("gamma", 1))


def snapshot(out: Path) -> dict[str, bytes | None]:
    """Every entry below `out` (hidden ones too): file bytes, None for a folder."""
    found: dict[str, bytes | None] = {}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        found[rel] = None if path.is_dir() else path.read_bytes()
    return found


def render(
    values: Path, out: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    return cli("render", "--values", str(values), "--out", str(out), *extra, env=env)


@pytest.fixture
def fleet(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]]:
    """(values, out, snapshot of version 1 in out, snapshot of version 2 rendered elsewhere)."""
    values = tiny_values(tmp_path / "v2")
    to_version_2(values)
    assert render(values, tmp_path / "v2" / "out")[0] == 0
    v2 = snapshot(tmp_path / "v2" / "out")
    values = tiny_values(tmp_path / "repo")
    out = tmp_path / "repo" / "out"
    assert render(values, out)[0] == 0
    v1 = snapshot(out)
    to_version_2(values)
    return values, out, v1, v2


def test_render_writes_only_what_changed_and_removes_only_what_is_stale(tmp_path: Path) -> None:
    values = tiny_values(tmp_path)
    out = tmp_path / "out"
    assert render(values, out)[0] == 0
    (out / "base" / "notes").mkdir()  # a folder render did not make is not render's to remove
    v1 = output.read_tree(out)
    before = {rel: (out / rel).stat().st_ino for rel in v1}
    (values / "teams/alpha.yaml").write_text(team("alpha", 3))
    (values / "teams/beta.yaml").unlink()
    assert render(values, tmp_path / "reference")[0] == 0  # what version 2 is, from scratch
    v2 = output.read_tree(tmp_path / "reference")
    code, text = render(values, out)
    assert code == 0, text
    assert output.read_tree(out) == v2
    after = {rel: (out / rel).stat().st_ino for rel in v2}
    rewritten = {rel for rel in after if after[rel] != before.get(rel)}
    changed = {rel for rel in v2 if v1.get(rel) != v2[rel]}
    assert rewritten == changed  # a new inode exactly where the bytes differ
    assert "base/teams/alpha/resourcequota-alpha-accelerators.yaml" in changed
    assert len(v2) - len(changed) > 10  # most files stay as they were
    assert set(v1) - set(v2) >= {"base/teams/beta/kustomization.yaml"}
    assert not (out / "base/teams/beta").exists()
    assert not (out / "overlays/dev/team-beta").exists()
    assert (out / "base/notes").is_dir()
    assert not [p for p in out.iterdir() if p.name.startswith(output.STAGING_PREFIX)]


def test_an_unchanged_render_touches_nothing(tmp_path: Path) -> None:
    values = tiny_values(tmp_path)
    out = tmp_path / "out"
    assert render(values, out)[0] == 0
    stat = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*")}
    assert render(values, out)[0] == 0
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.rglob("*")} == stat


def test_every_step_is_reached_by_the_fixture_change(
    fleet: tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]],
) -> None:
    """Each step of output.STEPS occurs in the change the fault tests make, so a failure injected
    at it really fires (the parametrised tests below would pass vacuously otherwise)."""
    values, out, _, v2 = fleet
    seen: dict[str, int] = {}
    real_hit = output._Faults.hit

    def count(self: output._Faults, step: str) -> None:
        seen[step] = seen.get(step, 0) + 1
        real_hit(self, step)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(output._Faults, "hit", count)
        assert render(values, out)[0] == 0
    assert set(seen) == set(output.STEPS)
    assert snapshot(out) == v2


@pytest.mark.parametrize("step", [s for s in output.STEPS if s != "committed"])
def test_a_failure_at_any_step_leaves_the_previous_tree(
    step: str,
    fleet: tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]],
) -> None:
    values, out, v1, v2 = fleet
    code, text = render(values, out, env={output.FAULT_ENV: f"{step}:raise"})
    assert code == 2, text
    assert f"injected fault at step {step} #1" in text
    assert "while writing; the previous output is restored" in text
    assert "Traceback" not in text
    assert snapshot(out) == v1  # byte for byte, and no staging folder
    assert render(values, out)[0] == 0
    assert snapshot(out) == v2


def test_a_failure_late_in_a_step_leaves_the_previous_tree(
    fleet: tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]],
) -> None:
    values, out, v1, _ = fleet
    for spec in ("replaced:3:raise", "removed:2:raise", "created:3:raise"):
        code, text = render(values, out, env={output.FAULT_ENV: spec})
        assert code == 2 and "the previous output is restored" in text, (spec, text)
        assert snapshot(out) == v1, spec


def _render_process(
    values: Path, out: Path, *extra: str, fault: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != output.FAULT_ENV}
    if fault:
        env[output.FAULT_ENV] = fault
    return render_py(
        "render",
        "--values",
        str(values),
        "--out",
        str(out),
        *extra,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("step", output.STEPS)
def test_sigkill_at_any_step_is_undone_by_the_next_run(
    step: str,
    fleet: tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]],
) -> None:
    values, out, v1, v2 = fleet
    killed = _render_process(
        values,
        out,
        fault=f"{step}:2:kill" if step in ("staged", "linked", "replaced") else f"{step}:kill",
    )
    assert killed.returncode == -9, killed.stderr
    staging = [p for p in out.iterdir() if p.name.startswith(output.STAGING_PREFIX)]
    assert len(staging) == 1  # what no handler could clean up
    if step in ("replaced", "removed", "pruned", "created"):
        assert snapshot(out) not in (v1, v2)  # a half-changed tree, as a kill leaves it
    journalled = (
        output.STEPS.index("journal") <= output.STEPS.index(step) < output.STEPS.index("committed")
    )
    # A check writes nothing, not even a roll-back: it says a render was interrupted.
    before = snapshot(out)
    check = _render_process(values, out, "--check")
    assert snapshot(out) == before
    if journalled:
        assert check.returncode == 1
        assert "an interrupted render left" in check.stdout, check.stdout + check.stderr
    # The next render first restores one consistent tree (what recover() does), then renders.
    message = output.recover(out)
    if journalled:
        assert "an interrupted render was rolled back" in message
        assert "the output is as it was before it" in message
    else:
        assert "rolled back" not in message
    if step == "committed":  # the change was complete: it stands
        assert snapshot(out) == v2
    else:
        assert snapshot(out) == v1
    check = _render_process(values, out, "--check")
    assert check.returncode == (0 if step == "committed" else 1), check.stdout + check.stderr
    assert _render_process(values, out).returncode == 0
    assert snapshot(out) == v2


def test_a_roll_back_killed_half_way_finishes_on_the_next_run(
    fleet: tuple[Path, Path, dict[str, bytes | None], dict[str, bytes | None]],
) -> None:
    values, out, v1, _ = fleet
    assert _render_process(values, out, fault="created:1:kill").returncode == -9
    (staging,) = [p for p in out.iterdir() if p.name.startswith(output.STAGING_PREFIX)]
    # Simulate a roll-back that put back one file and was killed: the rest must still come back.
    journal = (staging / output.JOURNAL).read_text()
    first = sorted((staging / "old").rglob("*.yaml"))[0]
    os.replace(first, out / first.relative_to(staging / "old"))
    assert (staging / output.JOURNAL).read_text() == journal
    assert output.recover(out).startswith("an interrupted render was rolled back")
    assert snapshot(out) == v1


# ---- real file system limits --------------------------------------------------------------


def _mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        return False
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    return proc.returncode == 0


def _mount_loop(where: Path, image: Path, size_kib: int) -> bool:
    """A size-limited ext4 image on a loop device: for machines that refuse tmpfs mounts."""
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
        return False
    with open(image, "wb") as fh:
        fh.truncate(size_kib * 1024)
    if subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], capture_output=True).returncode:
        return False
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-o", "loop", str(image), str(where)], capture_output=True)
    return proc.returncode == 0


@contextlib.contextmanager
def small_disk(tmp_path: Path, size_kib: int) -> Iterator[tuple[Path, str]]:
    """(mount point, how): a small tmpfs, else a loop device, else a plain folder ("patched")."""
    where = tmp_path / "disk"
    how = "patched"
    if _mount_tmpfs(where, f"{size_kib}k"):
        how = "tmpfs"
    elif _mount_loop(where, tmp_path / "disk.img", size_kib):
        how = "loop"
    where.mkdir(exist_ok=True)
    try:
        yield where, how
    finally:
        if how != "patched":
            subprocess.run(["umount", "-l", str(where)], check=True)


def _fill(disk: Path) -> Path:
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as fh:  # unbuffered: close() has nothing left to write
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_a_full_disk_leaves_the_previous_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record_property: Callable[[str, object], None]
) -> None:
    values = tiny_values(tmp_path)
    with small_disk(tmp_path, 2048) as (disk, how):
        record_property("full disk through", how)  # tmpfs, loop or patched: in the JUnit XML
        print(f"full disk through: {how}")
        out = disk / "out"
        assert render(values, out)[0] == 0
        before = snapshot(out)
        to_version_2(values)
        if how == "patched":
            real = Path.write_bytes

            def full(self: Path, data: bytes) -> int:
                if output.STAGING_PREFIX in str(self):
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
                return real(self, data)

            monkeypatch.setattr(Path, "write_bytes", full)
        else:
            filler = _fill(disk)
        code, text = render(values, out)
        assert code == 2, text
        assert f"cannot write the output in {out}: No space left on device" in text
        assert "the previous output is restored; free some space and render again" in text
        assert snapshot(out) == before
        if how == "patched":
            monkeypatch.undo()
        else:
            filler.unlink()
        assert render(values, out)[0] == 0
        assert snapshot(out) != before


def test_a_read_only_output_folder_is_a_clear_error(tmp_path: Path) -> None:
    values = tiny_values(tmp_path)
    with small_disk(tmp_path, 4096) as (disk, how):
        out = disk / "out"
        assert render(values, out)[0] == 0
        before = snapshot(out)
        if how == "patched":  # not root: permissions are enough
            for path in [out, *out.rglob("*")]:
                if path.is_dir():
                    path.chmod(0o555)
        else:
            subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        to_version_2(values)
        code, text = render(values, out)
        assert code == 2, text
        assert f"error: cannot write the output in {out}: " in text
        assert "Read-only file system" in text or "Permission denied" in text
        assert "nothing was changed; make it writable or render elsewhere with --out DIR" in text
        assert "Traceback" not in text
        assert snapshot(out) == before
        if how == "patched":
            for path in [out, *out.rglob("*")]:
                if path.is_dir():
                    path.chmod(0o755)
