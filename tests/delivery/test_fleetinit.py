"""`init DIR`: a fleet repository that renders, validates, passes actionlint with pinned actions,
and overwrites nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from generator.delivery import fleetinit
from tests import repos
from tests.fixtures import ROOT, actionlint, cli, unpinned, validate_committed


def test_init_writes_a_fleet_repository_that_renders_and_validates_clean(tmp_path: Path) -> None:
    dest = tmp_path / "Acme Fleet"
    code, out = cli("init", str(dest), "--requirement", "accel-gitops @ file:///w/a.whl")
    assert code == 0, out
    assert out.splitlines()[:4] == [
        f"init: wrote 17 files in {dest}. Next:",
        f"  cd {dest}",
        "  accel-gitops render      # base/ and overlays/ from values/",
        "  accel-gitops validate    # every check (`accel-gitops tools install` first)",
    ]
    fleet = yaml.safe_load((dest / "values/fleet.yaml").read_text())
    assert fleet["name"] == "acme-fleet"  # the folder's name as a DNS label
    assert fleet["git"]["repoURL"] == "https://git.example.com/acme-fleet.git"
    requirements = (dest / "requirements-accel-gitops.txt").read_text().splitlines()
    assert requirements[-1] == "accel-gitops @ file:///w/a.whl"
    assert "/.cache/" in (dest / ".gitignore").read_text().splitlines()
    # The schemas as this checkout commits them (tests/cli/test_render.py holds those current).
    for kind in ("environment", "fleet", "inventory", "team", "vendor"):
        want = (ROOT / f"schemas/{kind}.schema.json").read_text()
        assert (dest / f"schemas/{kind}.schema.json").read_text() == want
    assert repos.git(dest, "symbolic-ref", "--short", "HEAD") == "main"  # git init -b main
    assert cli("render", "--values", str(dest / "values"))[0] == 0
    code, out = validate_committed(dest / "values", drift=True)
    assert code == 0, out
    assert "0 error(s), 0 warning(s)" in out


def test_the_scaffold_workflows_pass_actionlint_and_call_only_pinned_actions(
    tmp_path: Path,
) -> None:
    dest = tmp_path / "fleet"
    assert cli("init", str(dest), "--name", "acme")[0] == 0
    workflows = sorted((dest / ".github/workflows").glob("*.yaml"))
    assert [p.name for p in workflows] == ["accel-gitops.yaml", "publish.yaml", "pull-request.yaml"]
    proc = actionlint(*workflows, cwd=dest)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert unpinned(*workflows) == []
    # the repository's own workflows call the reusable one beside them
    for name in ("publish.yaml", "pull-request.yaml"):
        jobs = yaml.safe_load((dest / ".github/workflows" / name).read_text())["jobs"]
        assert jobs["accel-gitops"]["uses"] == "./.github/workflows/accel-gitops.yaml"


def test_init_overwrites_nothing_and_says_what_is_there(tmp_path: Path) -> None:
    dest = tmp_path / "fleet"
    (dest / "values").mkdir(parents=True)
    (dest / "values/fleet.yaml").write_text("mine\n")
    (dest / "README.md").write_text("mine\n")
    code, out = cli("init", str(dest))
    assert code == 2, out
    assert (
        f"error: {dest} already has README.md, values/fleet.yaml: init writes a new fleet " in out
    )
    assert (dest / "README.md").read_text() == "mine\n"
    assert sorted(p.name for p in dest.rglob("*")) == ["README.md", "fleet.yaml", "values"]
    # A whole scaffold there already: five named, the rest counted.
    again = tmp_path / "again"
    assert cli("init", str(again))[0] == 0
    code, out = cli("init", str(again))
    assert code == 2
    assert (
        f"error: {again} already has .github/workflows/accel-gitops.yaml, "
        ".github/workflows/publish.yaml, .github/workflows/pull-request.yaml, .gitignore, "
        ".pre-commit-config.yaml and 12 more: init writes" in out
    )


def test_init_inside_a_repository_does_not_start_another(tmp_path: Path) -> None:
    outer = repos.init(tmp_path / "monorepo")
    assert cli("init", str(outer / "fleets/acme"))[0] == 0
    assert not (outer / "fleets/acme/.git").exists()


def test_default_name_is_a_dns_label() -> None:
    assert fleetinit.default_name(Path("/x/My_GPU Fleet!")) == "my-gpu-fleet"
    assert fleetinit.default_name(Path("/x/--gpu--")) == "gpu"
    assert fleetinit.default_name(Path("/x/___")) == "fleet"
    assert fleetinit.default_name(Path("/x/" + "a" * 70)) == "a" * 63
    # cut at 63, then no dash may end it; leading dashes go before the cut
    assert fleetinit.default_name(Path("/x/" + "a" * 62 + "-b")) == "a" * 62
    assert fleetinit.default_name(Path("/x/-----" + "a" * 62)) == "a" * 62


def test_a_clash_names_five_files_and_counts_the_rest(tmp_path: Path) -> None:
    spec = fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a.git", "accel-gitops")
    planned = list(fleetinit.files(spec))
    for count, tail in ((5, ": init writes"), (6, " and 1 more: init writes")):
        dest = tmp_path / str(count)
        for rel in planned[:count]:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).write_text("mine\n")
        code, out = cli("init", str(dest))
        assert code == 2
        assert f"already has {', '.join(planned[:5])}{tail}" in out, out


def test_text_is_written_as_given_whole_lines_and_no_html_escaping(tmp_path: Path) -> None:
    wheel = "accel-gitops @ https://pkgs.example.com/a.whl?token=<x>&v=1"
    spec = fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a&b.git", wheel)
    written = fleetinit.files(spec)
    assert written["requirements-accel-gitops.txt"].endswith(f"\n{wheel}\n")
    assert "repoURL: https://git.example.com/a&b.git\n" in written["values/fleet.yaml"]
    assert all(text.endswith("\n") for text in written.values())


def test_the_scaffold_is_ascii_so_every_locale_reads_and_writes_it_alike() -> None:
    spec = fleetinit.Scaffold(Path("x"), "acme", "https://git.example.com/a.git", "accel-gitops")
    assert all(text.isascii() for text in fleetinit.files(spec).values())


# ---- `init --ci gitlab`: GitLab's pipeline doing the GitHub workflows' jobs ----------------------
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"


def gitlab_schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    """GitLab's CI schema as check-jsonschema (pinned in the dev dependencies) vendors it
    (builtin_schemas/vendor/gitlab-ci.json, from gitlab-org/gitlab
    app/assets/javascripts/editor/schema/ci.json), with the options its own pre-commit hook
    for GitLab CI passes (catalog.py, `gitlab-ci`): GitLab's !reference tags, and patterns as
    GitLab's non-unicode regular expressions."""
    return subprocess.run(
        [
            str(CHECK_JSONSCHEMA),
            "--builtin-schema",
            "vendor.gitlab-ci",
            "--data-transform",
            "gitlab-ci",
            "--regex-variant",
            "nonunicode",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_init_ci_gitlab_writes_the_gitlab_pipeline_and_no_github_workflow(tmp_path: Path) -> None:
    dest = tmp_path / "fleet"
    code, out = cli("init", str(dest), "--name", "acme", "--ci", "gitlab")
    assert code == 0, out
    assert out.splitlines()[0] == f"init: wrote 16 files in {dest}. Next:"
    assert (dest / ".gitlab-ci.yml").is_file()
    assert (dest / ".gitlab/accel-gitops-validate.yml").is_file()
    assert not (dest / ".github").exists() and not (dest / "gitlab").exists()
    readme = (dest / "README.md").read_text()
    assert "5. Open a merge request: CI (`.gitlab-ci.yml`) runs `render --check`" in readme
    assert ".github" not in readme
    # The default is GitHub's, with no GitLab file.
    default = fleetinit.files(
        fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a.git", "accel-gitops")
    )
    assert ".gitlab-ci.yml" not in default and ".github/workflows/accel-gitops.yaml" in default


def test_an_unknown_forge_is_a_usage_error(tmp_path: Path) -> None:
    code, out = cli("init", str(tmp_path / "fleet"), "--ci", "gitea")
    assert code == 2
    assert "'gitea' is not one of 'github', 'gitlab'" in out
    assert not (tmp_path / "fleet").exists()


def test_the_gitlab_pipeline_passes_gitlabs_ci_schema_which_refuses_a_broken_one(
    tmp_path: Path,
) -> None:
    spec = fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a.git", "x", ci="gitlab")
    text = fleetinit.files(spec)[".gitlab-ci.yml"]
    good = tmp_path / ".gitlab-ci.yml"
    good.write_text(text)
    proc = gitlab_schema_check(good)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The same check refuses what GitLab would: here a misspelt keyword.
    bad = tmp_path / "bad" / ".gitlab-ci.yml"
    bad.parent.mkdir()
    bad.write_text(text.replace("  resource_group:", "  resource_groups:"))
    proc = gitlab_schema_check(bad)
    assert proc.returncode == 1
    assert (
        "$.publish: Additional properties are not allowed ('resource_groups' was unexpected)"
        in (proc.stdout)
    )


def test_the_gitlab_pipeline_runs_the_github_workflows_jobs(tmp_path: Path) -> None:
    """check: render --check and validate both run, both decide the job, findings as the merge
    request's JUnit report (a sum over capacity at the changed line), the plan, the diff against
    the target branch and the fleet report as artifacts; publish: after check, on the default
    branch with GITOPS_REPO set, one at a time. Every script is valid shell."""
    spec = fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a.git", "x", ci="gitlab")
    pipeline = yaml.safe_load(fleetinit.files(spec)[".gitlab-ci.yml"])
    check, publish = pipeline["check"], pipeline["publish"]
    script = "\n".join(check["script"])
    assert 'accel-gitops render --check --values "$VALUES" || render=$?' in script
    assert 'accel-gitops validate --values "$VALUES" --changed-since "$base" || validate=$?' in (
        script
    )
    assert "--output junit" in script and check["artifacts"]["reports"]["junit"] == (
        "accel-gitops/validate.xml"
    )
    assert 'accel-gitops diff --values "$VALUES" --base "$base" --output markdown' in script
    assert "accel-gitops plan" in script and "accel-gitops report" in script
    assert script.rstrip().endswith('[ "$render" -eq 0 ] && [ "$validate" -eq 0 ]')
    assert check["artifacts"]["when"] == "always" and check["interruptible"] is True
    before = pipeline[".accel-gitops"]["before_script"]
    assert any("accel-gitops tools install" in line for line in before)
    assert pipeline[".accel-gitops"]["cache"]["key"]["files"] == ["$REQUIREMENTS"]
    assert publish["needs"] == ["check", {"job": "validate", "optional": True}]
    assert publish["interruptible"] is False
    assert publish["resource_group"] == "accel-gitops-publish"
    assert publish["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH && $GITOPS_REPO"}]
    assert "accel-gitops publish" in "\n".join(publish["script"])
    for job in (check, publish):
        lines = [*before, *job["script"]]
        proc = subprocess.run(
            ["bash", "-n"], input="\n".join(lines), capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, proc.stderr


def test_the_gitlab_scaffold_is_ascii() -> None:
    spec = fleetinit.Scaffold(Path("x"), "acme", "https://git.example.com/a.git", "x", ci="gitlab")
    assert all(text.isascii() for text in fleetinit.files(spec).values())


# ---- GitLab: validate on several runners, a child pipeline ---------------------------------------
CHILD = ".gitlab/accel-gitops-validate.yml"


def _gitlab(tmp_path: Path) -> dict[str, str]:
    spec = fleetinit.Scaffold(tmp_path, "acme", "https://git.example.com/a.git", "x", ci="gitlab")
    return fleetinit.files(spec)


def _check_script(written: dict[str, str]) -> str:
    return "\n".join(yaml.safe_load(written[".gitlab-ci.yml"])["check"]["script"])


def _child_of(tmp_path: Path, written: dict[str, str], shards: str, runners: str) -> Path:
    """Run the check job's lines that write the child pipeline, with a stand-in accel-gitops
    that prints `shards` for `validate --matrix`: the file written."""
    repo = tmp_path / "repo"
    (repo / ".gitlab").mkdir(parents=True, exist_ok=True)
    (repo / "accel-gitops").mkdir(exist_ok=True)
    (repo / CHILD).write_text(written[CHILD])
    fake = tmp_path / "bin" / "accel-gitops"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        f"#!/bin/sh\n[ \"$*\" = 'validate --values values --matrix {runners}' ] || exit 3\necho '{shards}'\n"
    )
    fake.chmod(0o755)
    script = _check_script(written)
    start = script.index('if [ "$VALIDATE_RUNNERS" != 1 ]; then')
    block = script[start : script.index("\nelif", start)] + "\nfi\n"
    proc = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=repo,
        env={
            "PATH": f"{fake.parent}:/usr/bin:/bin",
            "VALUES": "values",
            "VALIDATE_RUNNERS": runners,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return repo / "accel-gitops/validate-pipeline.yml"


def test_gitlab_validates_in_a_child_pipeline_of_as_many_shards_as_matrix_lists(
    tmp_path: Path,
) -> None:
    """VALIDATE_RUNNERS (default 1: the check job validates) set to auto or N: the check job
    writes the child pipeline with `parallel` the count `validate --matrix` listed (one for
    []), which passes GitLab's schema; the validate job triggers it after a failed render too,
    passing the target branch; publish needs it when it is there."""
    written = _gitlab(tmp_path)
    pipeline = yaml.safe_load(written[".gitlab-ci.yml"])
    assert pipeline["variables"]["VALIDATE_RUNNERS"] == "1"
    assert pipeline["stages"] == ["check", "validate", "publish"]
    trigger = pipeline["validate"]
    assert trigger["needs"] == ["check"]
    assert trigger["rules"] == [{"if": '$VALIDATE_RUNNERS != "1"', "when": "always"}]
    assert trigger["trigger"] == {
        "include": [{"artifact": "accel-gitops/validate-pipeline.yml", "job": "check"}],
        "strategy": "depend",
    }
    assert trigger["variables"] == {"TARGET_BRANCH": "$CI_MERGE_REQUEST_TARGET_BRANCH_NAME"}
    assert pipeline["publish"]["needs"] == ["check", {"job": "validate", "optional": True}]
    for shards, runners, want in (
        ('["1/4", "2/4", "3/4", "4/4"]', "auto", 4),
        ("[]", "auto", 1),
        ('["1/2", "2/2"]', "2", 2),
        (
            '["1/12", "2/12", "3/12", "4/12", "5/12", "6/12", "7/12", "8/12", "9/12", "10/12", "11/12", "12/12"]',
            "12",
            12,
        ),
    ):
        child = _child_of(tmp_path, written, shards, runners)
        assert yaml.safe_load(child.read_text())["validate"]["parallel"] == want
        proc = gitlab_schema_check(child)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # only that line changed
        assert child.read_text() == written[CHILD].replace(
            "  parallel: 2\n", f"  parallel: {want}\n"
        )


def test_gitlab_child_pipeline_shards_then_merges_into_the_junit_verdict(tmp_path: Path) -> None:
    """Each shard job: `validate --shard CI_NODE_INDEX/CI_NODE_TOTAL` to its JSON report, which
    passes with findings and fails on a tool error; the verdict job after all of them, even
    failed ones, merges the reports into JUnit and the exit. Its variables and setup are the
    parent's."""
    written = _gitlab(tmp_path)
    parent = yaml.safe_load(written[".gitlab-ci.yml"])
    child = yaml.safe_load(written[CHILD])
    assert child[".accel-gitops"] == parent[".accel-gitops"]
    assert {k: v for k, v in parent["variables"].items() if k in child["variables"]} == child[
        "variables"
    ]
    assert set(parent["variables"]) - set(child["variables"]) == {"GITOPS_USER", "VALIDATE_RUNNERS"}
    verdict = child["verdict"]
    assert verdict["needs"] == ["validate"] and verdict["when"] == "always"
    assert verdict["artifacts"]["reports"] == {"junit": "accel-gitops/validate.xml"}
    merge = verdict["script"][0]
    assert (
        "accel-gitops validate --merge --output junit accel-gitops/shards/validate-*.json" in merge
    )
    assert merge.rstrip().endswith(
        "accel-gitops validate --merge accel-gitops/shards/validate-*.json"
    )
    assert child["validate"]["artifacts"]["paths"] == ["accel-gitops/shards/"]
    # the shard job's script, with a stand-in accel-gitops exiting 0, 1 or 2
    fake = tmp_path / "bin" / "accel-gitops"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\necho "$@" > "$ARGS"\necho \'{"r": 1}\'\nexit "$CODE"\n')
    fake.chmod(0o755)
    for code, passes in (("0", True), ("1", True), ("2", False)):
        work = tmp_path / f"w{code}"
        work.mkdir()
        env = {
            "PATH": f"{fake.parent}:/usr/bin:/bin",
            "VALUES": "values",
            "CI_NODE_INDEX": "3",
            "CI_NODE_TOTAL": "5",
            "TARGET_BRANCH": "",
            "ARGS": str(work / "args"),
            "CODE": code,
        }
        proc = subprocess.run(
            ["bash", "-e", "-c", child["validate"]["script"][0]],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == (0 if passes else 1), proc.stderr
        assert (work / "accel-gitops/shards/validate-3.json").read_text() == '{"r": 1}\n'
        assert (work / "args").read_text() == "validate --values values --shard 3/5 --output json\n"


def test_the_gitlab_check_job_validates_itself_when_validate_runners_is_1(tmp_path: Path) -> None:
    script = _check_script(_gitlab(tmp_path))
    one = script.index('if [ "$VALIDATE_RUNNERS" != 1 ]; then')
    assert script.index('\nelif [ -n "$base" ]; then', one) > one
    assert "--matrix" not in script[script.index("\nelif", one) :]
