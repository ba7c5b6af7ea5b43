"""fresh.py: a build step runs only when the content of its inputs, its command line or Go
changed; never on file times; a failed step leaves no stamp."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.toolchain import fresh


def test_the_digest_is_the_inputs_content_names_command_and_go(tmp_path: Path) -> None:
    mod = tmp_path / "mod"
    (mod / "sub").mkdir(parents=True)
    (mod / "go.mod").write_text("module x\n")
    (mod / "sub" / "a.go").write_text("package a\n")
    (mod / ".x.sha256").write_text("a stamp is no input\n")
    base = fresh.digest([mod], ["go", "build"], "go1.26.8")
    assert len(base) == 64
    # the same content elsewhere (another install folder, other times) is the same build
    other = tmp_path / "elsewhere" / "mod"
    other.parent.mkdir()
    os.rename(mod, other)
    os.utime(other / "go.mod", (0, 0))
    assert fresh.digest([other], ["go", "build"], "go1.26.8") == base
    (other / ".x.sha256").write_text("changed stamp\n")
    assert fresh.digest([other], ["go", "build"], "go1.26.8") == base
    changes = [
        fresh.digest([other], ["go", "build", "-tags", "x"], "go1.26.8"),
        fresh.digest([other], ["go", "build"], "go1.26.9"),
        fresh.digest([other / "go.mod"], ["go", "build"], "go1.26.8"),
    ]
    (other / "sub" / "a.go").write_text("package b\n")
    changes.append(fresh.digest([other], ["go", "build"], "go1.26.8"))
    os.rename(other / "sub" / "a.go", other / "sub" / "b.go")
    changes.append(fresh.digest([other], ["go", "build"], "go1.26.8"))
    assert len({base, *changes}) == 6
    # a missing input is no file, not an error
    assert fresh.digest([tmp_path / "none"], [], "") == fresh.digest([], [], "")


def test_refresh_runs_a_step_when_stale_only_and_stamps_only_success(tmp_path: Path) -> None:
    stamp, out = tmp_path / "bin" / ".t.sha256", tmp_path / "bin" / "t"
    runs: list[int] = []

    def step() -> None:
        runs.append(1)
        out.write_text("built")

    assert fresh.refresh(stamp, out, "d1", step) is True
    assert stamp.read_text() == "d1\n" and len(runs) == 1
    assert fresh.refresh(stamp, out, "d1", step) is False
    assert fresh.is_fresh(stamp, out, "d1") and not fresh.is_fresh(stamp, out, "d2")
    out.unlink()  # the output is gone: build again
    assert fresh.refresh(stamp, out, "d1", step) is True and len(runs) == 2

    def fails() -> None:
        raise RuntimeError("build failed")

    with pytest.raises(RuntimeError):
        fresh.refresh(stamp, out, "d2", fails)
    assert not stamp.exists()  # the old stamp is gone too: never taken for fresh
    assert not fresh.is_fresh(stamp, out, "d1")


def test_main_is_the_makefiles_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs, stamp, out = tmp_path / "in.txt", tmp_path / "s.sha256", tmp_path / "o.txt"
    inputs.write_text("a\n")
    argv = [str(stamp), str(out), "--", str(inputs), "--", "bash", "-c", f"echo x >> {out}"]
    assert fresh.main(argv) == 0
    assert fresh.main(argv) == 0
    assert out.read_text() == "x\n"  # ran once
    inputs.write_text("b\n")
    assert fresh.main(argv) == 0
    assert out.read_text() == "x\nx\n"
    failing = [str(stamp), str(out), "--", str(inputs), "--", "bash", "-c", "exit 3"]
    inputs.write_text("c\n")
    assert fresh.main(failing) == 3
    assert not stamp.exists()
    # no inputs at all: the command line alone decides
    none = tmp_path / "none.txt"
    assert fresh.main([str(tmp_path / "n.sha256"), str(none), "--", "--", "touch", str(none)]) == 0
    assert none.exists()
    capsys.readouterr()
    for bad in (
        [],
        [str(stamp), str(out)],
        [str(stamp), str(out), "x", "--"],
        [str(stamp), str(out), "--", "a"],
    ):
        assert fresh.main(bad) == 2
        assert capsys.readouterr().err == "usage: fresh.py STAMP OUTPUT -- INPUT... -- COMMAND...\n"


def test_go_version_names_the_go_on_path_else_the_usual_one_else_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Go's usual place (this machine, and CI's, have it there)
    monkeypatch.setenv("PATH", "")
    assert fresh.go_version().startswith("go version go1.")
    # the go on PATH first
    fake = tmp_path / "go"
    fake.write_text("#!/bin/sh\necho go version fake\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert fresh.go_version() == "go version fake"
    # a go that fails says nothing: its empty answer is the version
    fake.write_text("#!/bin/sh\nexit 1\n")
    assert fresh.go_version() == ""
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(os, "access", lambda *_: False)
    assert fresh.go_version() == ""
