#!/usr/bin/env python3
"""Mutation testing of the modules whose answers reach users (`make mutation`, docs/testing.md).

mutmut (pinned in the dev dependencies) rewrites one function at a time in a copy of the source
(a compared value flipped, a constant changed, a call's argument dropped...) and runs the tests
that call that function. A mutant no test notices is a one-line bug the suite would let through.

The modules are grouped in shards (tests/mutation/shards.toml): each shard mutates a few modules
and runs only the tests of their packages, so a run stays practical on two cores. Each shard has
a working folder of its own, ``.mutation/<shard>/``, where mutmut keeps its copy and its verdicts;
a second run re-tests only the functions whose source or tests changed.

After the run every mutant that no test killed is looked up in tests/mutation/equivalents.toml,
the triage file: a mutant listed there (module, function and the changed lines, with a reason)
cannot change behaviour and is left out of the score. Any other survivor is printed with its
diff. The score of a module is killed / (mutants - equivalents); the command exits 1 when a
module scores below its floor in shards.toml or an equivalent no longer matches any mutant.

    python tools/mutation.py run [SHARD ...]      mutate, test, report (exit 1 below a floor)
    python tools/mutation.py retest [SHARD ...]   re-test only the mutants no test killed (triage)
    python tools/mutation.py report [SHARD ...]   report the last run again, run nothing
    python tools/mutation.py list                 the shards and their modules
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARDS = Path("tests/mutation/shards.toml")
EQUIVALENTS = Path("tests/mutation/equivalents.toml")
WORK = Path(".mutation")

# mutmut copies these itself (the source and the tests); the shard writes its own pyproject.toml.
MUTMUT_COPIES = {"generator", "tests", "pyproject.toml"}
# Top-level entries a shard's copy must not hold: version control, caches, environments, and the
# working folders themselves. Everything else is copied too, so tests find the repository they
# expect (the example values and output, the Makefile, docs).
NOT_COPIED = {".git", ".venv", ".tools", ".mutation", ".cache", ".hypothesis", "mutants"}
NOT_COPIED |= {".mypy_cache", ".ruff_cache", ".pytest_cache", "accel_gitops.egg-info"}

# mutmut's exit codes (mutmut/stats.py, status_by_exit_code): which ones a test detected.
DETECTED = {
    1: "killed",
    3: "killed",  # pytest's internal error: the mutant broke the run
    36: "timeout",
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
}
# A worker killed by a signal (-9: the run was interrupted, or the CPU limit's SIGKILL) proves
# nothing: it stays not killed until a run decides it.
UNDETECTED = {0: "survived", 5: "no tests", 33: "no tests", None: "not checked", -9: "interrupted"}


@dataclass(frozen=True)
class Shard:
    name: str
    tests: tuple[str, ...]
    floors: dict[str, float]  # module path -> lowest accepted score, in per cent
    # Tests (node id prefixes) of those paths left out of the run: the whole-fleet integration
    # tests make every survivor cost seconds and are the snapshot's kind of guard, not a test
    # of one behaviour (docs/testing.md). `make test` still runs them.
    deselect: tuple[str, ...] = ()


@dataclass(frozen=True)
class Equivalent:
    module: str
    function: str
    mutation: tuple[str, ...]
    reason: str


@dataclass
class ModuleScore:
    module: str
    floor: float
    killed: int = 0
    equivalent: int = 0
    survivors: list[tuple[str, str, str]] = field(default_factory=list)  # name, status, diff

    @property
    def total(self) -> int:
        return self.killed + self.equivalent + len(self.survivors)

    @property
    def score(self) -> float:
        counted = self.total - self.equivalent
        return 100.0 if counted == 0 else 100.0 * self.killed / counted


def load_shards() -> list[Shard]:
    data = tomllib.loads(SHARDS.read_text())
    return [
        Shard(
            name,
            tuple(body["tests"]),
            {m: float(f) for m, f in body["modules"].items()},
            tuple(body.get("deselect", ())),
        )
        for name, body in data["shard"].items()
    ]


def load_equivalents() -> list[Equivalent]:
    if not EQUIVALENTS.exists():
        return []
    data = tomllib.loads(EQUIVALENTS.read_text())
    return [
        Equivalent(e["module"], e["function"], tuple(_norm(e["mutation"])), e["reason"])
        for e in data.get("equivalent", [])
    ]


def _norm(lines: Iterable[str]) -> list[str]:
    """Changed lines without their indentation: a reformatted block keeps its triage."""
    return [line[0] + line[1:].strip() for line in lines]


def changed_lines(diff: str) -> list[str]:
    """The - and + lines of a unified diff, without its file headers."""
    return _norm(
        line
        for line in diff.splitlines()
        if line[:1] in "-+" and not line.startswith(("---", "+++"))
    )


def function_of(mutant: str) -> str:
    """``generator.plan.x_plan_fleet__mutmut_3`` -> ``plan_fleet`` (methods: ``Class.method``)."""
    name = mutant.rpartition(".")[2].rpartition("__mutmut_")[0]
    if name.startswith("x_"):
        return name[2:]
    return name.removeprefix("xǁ").replace("ǁ", ".").strip(".")


# ---- a shard's working folder -----------------------------------------------------------------


def prepare(shard: Shard) -> Path:
    """``.mutation/<shard>``: links to the repository, and a pyproject.toml for mutmut."""
    work = WORK / shard.name
    work.mkdir(parents=True, exist_ok=True)
    root = Path.cwd()
    linked = [e for e in root.iterdir() if e.name not in NOT_COPIED | MUTMUT_COPIES]
    for entry in [*linked, root / "generator", root / "tests"]:
        link = work / entry.name
        if not link.is_symlink():
            link.symlink_to(entry)
    project = tomllib.loads((root / "pyproject.toml").read_text())
    pytest_options = project["tool"]["pytest"]["ini_options"]
    # mutmut copies the source (source_paths) and tests/ itself; the rest is listed here.
    also_copy = sorted(e.name for e in linked)
    config = {
        "source_paths": ["generator"],
        "only_mutate": sorted(shard.floors),
        "pytest_add_cli_args_test_selection": [
            *shard.tests,
            *(arg for test in shard.deselect for arg in ("--deselect", test)),
        ],
        # The suite's own options, minus xdist: mutmut runs each mutant's tests in one process.
        # (tests/conftest.py removes each mutant's tmp_path folders: pytest's cleanup cannot.)
        "pytest_add_cli_args": ["-p", "no:cacheprovider"],
        "also_copy": also_copy,
        "timeout_multiplier": 5.0,
        "use_git_change_detection": False,
    }
    text = "[tool.pytest.ini_options]\n" + _toml_table(pytest_options)
    text += "\n[tool.mutmut]\n" + _toml_table(config)
    (work / "pyproject.toml").write_text(text)
    return work


def _toml_table(table: dict[str, object]) -> str:
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())


def tests_digest(shard: Shard) -> str:
    """SHA-256 of what decides the shard's verdicts besides the mutated source: its tests, the
    shared test helpers, its mutmut configuration and mutmut's version."""
    from importlib.metadata import version

    digest = hashlib.sha256(version("mutmut").encode())
    files = [p for p in Path("tests").glob("*.py")]
    for test in shard.tests:
        path = Path(test)
        files += sorted(path.rglob("*")) if path.is_dir() else [path]
    files.append(WORK / shard.name / "pyproject.toml")
    for path in sorted(set(files)):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run_shard(shard: Shard, max_children: int, retest: bool) -> int:
    """mutmut over the shard. mutmut re-tests a function's mutants when the function changes,
    but not when the tests do: a changed test restarts the shard from scratch (`run`), or
    re-tests just the mutants no test killed (`retest`, the triage loop)."""
    work = prepare(shard)
    env = dict(os.environ)
    # The tests find the pinned tools the repository built, not a copy in the working folder.
    env.setdefault("ACCEL_GITOPS_TOOLS_DIR", str(Path.cwd() / ".tools"))
    # A mutated module holds every mutant of every function: compiling it again in each
    # subprocess a test starts (the CLI, render.py) costs more than the test. Keep the bytecode.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    mutmut = shutil.which("mutmut", path=str(Path(sys.executable).parent)) or "mutmut"
    cmd = [mutmut, "run", "--max-children", str(max_children)]
    stamp = work / "tests.sha256"
    digest = tests_digest(shard)
    print(f"== shard {shard.name}: {', '.join(shard.floors)} against {' '.join(shard.tests)}")
    if retest:
        # Fresh test-to-function stats (a changed test may reach new functions), then only the
        # mutants that no test killed. Killed verdicts may be stale, so the stamp is cleared.
        names = [
            name
            for m in sorted(shard.floors)
            for name, code in verdicts(shard, m)
            if code not in DETECTED
        ]
        print(f"   re-testing the {len(names)} mutants no test killed")
        (work / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
        stamp.unlink(missing_ok=True)
        if not names:
            return 0
        cmd += names
    elif not stamp.exists() or stamp.read_text() != digest:
        print("   tests changed since the last run (or none yet): every mutant is tested")
        shutil.rmtree(work / "mutants", ignore_errors=True)
    sys.stdout.flush()
    code = subprocess.run(cmd, cwd=work, env=env, check=False).returncode
    if code == 0 and not retest:
        stamp.write_text(digest)
    return code


# ---- the verdicts -------------------------------------------------------------------------------


def verdicts(shard: Shard, module: str) -> Iterator[tuple[str, int | None]]:
    """(mutant name, exit code) for every mutant of `module` in the shard's last run."""
    meta = WORK / shard.name / "mutants" / (module + ".meta")
    if meta.exists():
        yield from sorted(json.loads(meta.read_text())["exit_code_by_key"].items())


def diff_of(shard: Shard, module: str, name: str) -> str:
    """The mutant's diff, by mutmut's own code, read in the shard's working folder."""
    from mutmut.configuration import reset_config
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = Path.cwd()
    os.chdir(cwd / WORK / shard.name)
    try:
        reset_config()
        return get_diff_for_mutant(name, path=module)
    finally:
        os.chdir(cwd)


def unmutated(module: str) -> list[str]:
    """The functions of `module` mutmut leaves alone: it never mutates a decorated function
    (other than one whose only decorator is @staticmethod or @classmethod), so a bug in one
    cannot show in the score (source: mutmut 3.8.1, mutmut/mutation/file_mutation.py, the check
    that skips decorated functions). The report names them."""
    tree = ast.parse(Path(module).read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.decorator_list:
            only = node.decorator_list[0] if len(node.decorator_list) == 1 else None
            if not (isinstance(only, ast.Name) and only.id in ("staticmethod", "classmethod")):
                out.append(node.name)
    return sorted(out)


def score(shards: list[Shard], equivalents: list[Equivalent]) -> tuple[list[ModuleScore], set[int]]:
    """Each module's score, and the indices of the equivalents some mutant matched."""
    used: set[int] = set()
    index: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for i, e in enumerate(equivalents):
        index.setdefault((e.module, e.function, e.mutation), []).append(i)
    scores = []
    for shard in shards:
        for module, floor in shard.floors.items():
            result = ModuleScore(module, floor)
            dotted = module.removesuffix(".py").replace("/", ".")
            for name, code in verdicts(shard, module):
                if code in DETECTED:
                    result.killed += 1
                    continue
                diff = diff_of(shard, module, name)
                key = (dotted, function_of(name), tuple(changed_lines(diff)))
                match = index.get(key, [])
                if match:
                    used.update(match)
                    result.equivalent += 1
                else:
                    status = UNDETECTED.get(code, f"exit {code}")
                    result.survivors.append((name, status, diff))
            scores.append(result)
    return scores, used


def report(shards: list[Shard], all_shards: bool, markdown: Path | None) -> int:
    equivalents = load_equivalents()
    # A shard run alone (CI runs one per job) still owns the triage of its modules.
    mutated = {m.removesuffix(".py").replace("/", ".") for s in shards for m in s.floors}
    scores, used = score(shards, equivalents)
    failed = False
    survivors = [
        f"--- {status}: {name}\n{diff}\n" for s in scores for name, status, diff in s.survivors
    ]
    table = [
        "| module | mutants | killed | equivalent | not killed | score | floor |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scores:
        below = s.score < s.floor
        failed |= below or s.total == 0
        mark = " **below floor**" if below else ""
        mark = " **no mutants: not run?**" if s.total == 0 else mark
        table.append(
            f"| `{s.module}` | {s.total} | {s.killed} | {s.equivalent} | {len(s.survivors)} "
            f"| {s.score:.1f} % | {s.floor:.0f} %{mark} |"
        )
    stale = [
        e
        for i, e in enumerate(equivalents)
        if i not in used and (all_shards or e.module in mutated)
    ]
    notes = [
        f"stale triage in {EQUIVALENTS}: {e.module} {e.function} {list(e.mutation)} "
        "matches no mutant now: remove it"
        for e in stale
    ]
    failed |= bool(stale)
    notes += [
        f"not mutated: {s.module} {', '.join(skipped)} (decorated: mutmut skips them)"
        for s in scores
        if (skipped := unmutated(s.module))
    ]
    text = "\n".join([*survivors, *table, *notes]) + "\n"
    print(text, end="")
    if markdown is not None:
        body = "\n".join([*table, "", *notes, "", "```diff", *survivors, "```"]) + "\n"
        markdown.write_text(body if survivors else "\n".join([*table, "", *notes]) + "\n")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["run", "retest", "report", "list"])
    parser.add_argument("shards", nargs="*", help="shard names (default: all)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--markdown", type=Path, help="also write the table and survivors here")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (default: here)")
    parser.add_argument("--json", action="store_true", help="list: the shard names as JSON")
    args = parser.parse_intermixed_args(argv)
    markdown = args.markdown.resolve() if args.markdown else None
    os.chdir(args.root)
    shards = load_shards()
    known = {s.name for s in shards}
    unknown = sorted(set(args.shards) - known)
    if unknown:
        parser.error(f"unknown shard {', '.join(unknown)}; shards: {', '.join(sorted(known))}")
    chosen = [s for s in shards if not args.shards or s.name in args.shards]
    if args.command == "list" and args.json:
        # The CI workflow's matrix: one job per shard.
        print(json.dumps([s.name for s in chosen]))
        return 0
    if args.command == "list":
        for s in chosen:
            print(f"{s.name}: {' '.join(s.floors)}  (tests: {' '.join(s.tests)})")
        return 0
    if args.command in ("run", "retest"):
        for s in chosen:
            code = run_shard(s, args.max_children, retest=args.command == "retest")
            if code != 0:
                print(f"mutmut failed in shard {s.name} (exit {code})", file=sys.stderr)
                return 2
    return report(chosen, all_shards=len(chosen) == len(shards), markdown=markdown)


if __name__ == "__main__":
    sys.exit(main())
