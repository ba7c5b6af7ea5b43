"""The fleet report (issue 13): its numbers on a small values tree made for them, the page and the
Markdown built from them, the CLI, and the time a 300-team fleet takes.

The browser half (charts drawn, no request, no console error) is tests/fleetreport/test_browser.py.
"""

from __future__ import annotations

import subprocess
import time
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchmarks.fleet import make_values
from generator import plan
from generator.errors import UsageError
from generator.findings import Finding, Location, layer_key
from generator.fleetreport import inputs, page
from generator.fleetreport.numbers import compute
from generator.fleetreport.report import ReportOptions, report
from tests.example import EXAMPLE_VALUES
from tests.fixtures import (
    MIG_NVIDIA,
    NVIDIA,
    PROD_FLEET,
    REPORT_TREE,
    SHARED_NVIDIA,
    TWO_CLUSTERS,
    cli_streams,
    cross_clusters,
    tree,
)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return tree(tmp_path / "repo", REPORT_TREE, defaults=False)


# ------------------------------------------------------------------------------------- numbers


def test_capacity_and_promised_devices_per_vendor(small: Path) -> None:
    dev, prod = compute(small).envs
    rows = {r.vendor: r for r in dev.vendors}
    assert (rows["nvidia"].capacity, rows["ascend"].capacity) == (4, 16)  # 1 x 4, 2 x 8
    # a: quota x 2 namespaces; b: quota x 1
    assert (rows["nvidia"].promised, rows["ascend"].promised) == (2 * 2 + 4, 4 * 2 + 3)
    assert rows["nvidia"].overcommitted and rows["nvidia"].over_by == 4
    assert not rows["ascend"].overcommitted and rows["ascend"].over_by == 0
    # what the workloads need at once: the service's 3 replicas on each track
    assert (rows["nvidia"].needed, rows["ascend"].needed) == (3, 3)
    prod_rows = {r.vendor: r for r in prod.vendors}
    assert prod_rows["nvidia"].promised == 1 * 2 + 4  # prod lowers team a's quota
    assert prod_rows["nvidia"].over_by == 2


def test_cap_findings_beside_the_chart_are_this_environments(small: Path) -> None:
    dev, prod = compute(small).envs
    assert [f.code for f in dev.cap_findings] == ["CAP001"]
    assert "add up to 8 devices (a 4, b 4) but its pools hold 4" in dev.cap_findings[0].message
    assert dev.cap_findings[0].envs == ("dev",)  # the environment is a field, not text
    assert dev.cap_findings[0].text.endswith(" in environment 'dev'")
    assert "add up to 6 devices (a 2, b 4)" in prod.cap_findings[0].message
    assert str(dev.cap_findings[0].location) == "values/teams/b.yaml:1:17"


def test_cost_weights_and_the_saving_against_all_nvidia(small: Path) -> None:
    dev = compute(small).envs[0]
    a, b = dev.teams
    assert (a.team, a.devices) == ("a", {"ascend": 8, "nvidia": 4})
    assert a.weighted == 8 * 0.5 + 4 * 1.0
    assert a.baseline == 12 * 1.0
    assert a.saving == 4.0 and round(a.saving_pct, 1) == 33.3
    assert (b.weighted, b.baseline, b.saving) == (3 * 0.5 + 4.0, 7.0, 1.5)
    assert (dev.weighted, dev.baseline, dev.saving) == (13.5, 19.0, 5.5)


def test_each_vendor_row_says_its_unit_and_occupancy(tmp_path: Path) -> None:
    """A shared pool (4 shares), a MIG pool (2 GPUs of two 3g.40gb: 4 instances) and nvidia's 8
    GPUs: each row counts in its own unit; occupancy is what the workloads need at once of the
    capacity (3 of 4 shares, 1 of 4 instances, none of nvidia's: no workload uses it)."""
    team = (
        "quota: {nvidia-shared: 4, nvidia-mig: 4, nvidia: 1}\nservices:\n  embed:\n"
        "    images: {nvidia-shared: r/e:1}\n    tracks:\n"
        "      nvidia-shared: {devicesPerReplica: 1, replicas: 3}\n"
        "  rank:\n    images: {nvidia-mig: r/r:1}\n    tracks:\n"
        "      nvidia-mig: {devicesPerReplica: 1, replicas: 1}\n"
    )
    files = {
        "fleet.yaml": PROD_FLEET,
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-shared.yaml": SHARED_NVIDIA,
        "vendors/nvidia-mig.yaml": MIG_NVIDIA,
        "teams/a.yaml": team,
    }
    (env,) = compute(tree(tmp_path, files, defaults=False)).envs
    got = {r.vendor: (r.unit, r.capacity, r.needed, r.occupancy) for r in env.vendors}
    assert got == {
        "nvidia": ("devices", 8, None, None),
        "nvidia-mig": ("MIG 3g.40gb instances (1/2)", 4, 1, 25.0),
        "nvidia-shared": ("1/4 shares", 4, 3, 75.0),
    }


def test_a_share_costs_and_saves_its_part_of_a_device(tmp_path: Path) -> None:
    """8 shares of A100s sliced 4 ways at costWeight 2.0 a GPU weigh 8 x 0.5 = 4; all-NVIDIA
    (weight 1 a GPU) would price the same 8 shares as 2 GPUs, not 8: the saving is -2, not 4."""
    files = {
        "fleet.yaml": PROD_FLEET,
        "vendors/nvidia.yaml": NVIDIA,
        "vendors/nvidia-shared.yaml": SHARED_NVIDIA + "costWeight: 2.0\n",
        "teams/a.yaml": "quota: {nvidia-shared: 8, nvidia: 1}\n",
    }
    [env] = compute(tree(tmp_path, files, defaults=False)).envs
    [a] = env.teams
    assert a.devices == {"nvidia": 1, "nvidia-shared": 8}
    assert (a.weighted, a.baseline, a.saving) == (1.0 + 8 * 0.5, 1.0 + 8 * 0.25, -2.0)


def test_a_quota_per_model_costs_each_model_at_its_weight(tmp_path: Path) -> None:
    """One NVIDIA vendor file, A100 at costWeight 1 and H100 at 3 (costWeights): a team's
    quota of 2 H100 and 1 A100 in two namespaces weighs 2 x 2 x 3 + 2 x 1 x 1 = 14."""
    nvidia = NVIDIA + (
        "  - {name: h100, model: H100, devicesPerNode: 8, nodes: [h1]}\ncostWeights: {H100: 3}\n"
    )
    files = {
        "fleet.yaml": PROD_FLEET + "scheduling: {backend: kueue}\n",
        "vendors/nvidia.yaml": nvidia,
        "teams/a.yaml": "namespaces: [a1, a2]\nquota: {nvidia: {H100: 2, A100: 1}}\n",
    }
    [env] = compute(tree(tmp_path, files, defaults=False)).envs
    [a] = env.teams
    assert (a.devices, a.weighted, a.baseline) == ({"nvidia": 6}, 14.0, 6.0)


def test_baseline_vendor_from_values_or_the_catalog(small: Path) -> None:
    # Another baseline: every device at Ascend's weight from values/vendors/ascend.yaml.
    dev = compute(small, baseline_vendor="ascend").envs[0]
    assert (dev.baseline_weight, dev.teams[0].baseline) == (0.5, 12 * 0.5)
    # A fleet without NVIDIA still has an all-NVIDIA baseline: the catalog's weight.
    (small / "vendors" / "nvidia.yaml").unlink()
    (small / "teams" / "a.yaml").write_text("quota: {ascend: 4}\n")
    (small / "teams" / "b.yaml").write_text("quota: {ascend: 2}\n")
    (small / "environments" / "prod.yaml").write_text("{}\n")
    dev = compute(small).envs[0]
    assert dev.baseline_weight == 1.0  # generator/values/catalog/nvidia.yaml
    assert (dev.teams[0].weighted, dev.teams[0].baseline) == (2.0, 4.0)
    with pytest.raises(UsageError, match="baseline vendor 'kunlun' has no costWeight"):
        compute(small, baseline_vendor="kunlun")


def test_one_baseline_per_environment_in_every_cluster_of_it(tmp_path: Path) -> None:
    """TWO_CLUSTERS with NVIDIA at costWeight 2.0 (the catalog says 1.0): cluster domestic has
    no NVIDIA, and still prices its devices at the environment's NVIDIA weight, as main does."""
    files = {**TWO_CLUSTERS, "vendors/nvidia.yaml": NVIDIA + "costWeight: 2.0\n"}
    values_dir = tree(tmp_path / "repo", files, fleet=PROD_FLEET)
    domestic, main = compute(values_dir).envs
    assert (domestic.env, domestic.baseline_weight) == ("prod/domestic", 2.0)
    assert (main.env, main.baseline_weight) == ("prod/main", 2.0)
    # Team ml's 4 MLUs at Cambricon's 0.6, against 4 devices at NVIDIA's 2.0.
    [ml] = domestic.teams
    assert (ml.devices, ml.weighted, ml.baseline) == ({"cambricon": 4}, 2.4, 8.0)
    assert round(domestic.saving_pct, 1) == 70.0
    code, out, _ = cli_streams("report", "--values", str(values_dir), "--output", "markdown")
    assert code == 0
    said = "baseline: every device at nvidia's weight"
    assert [line.split(said)[1] for line in out.splitlines() if said in line] == [" 2.", " 2."]


def test_migration_phases_replicas_and_traffic(small: Path) -> None:
    dev, prod = compute(small).envs
    [m] = dev.migrations
    assert (m.row.team, m.row.service, m.old, m.new) == ("b", "s", "nvidia", "ascend")
    assert (m.row.phase, m.step, m.new_traffic) == ("shift-30", 2, 30)
    assert [(t.vendor, t.replicas, t.weight) for t in m.row.tracks] == [
        ("nvidia", 3, 70),
        ("ascend", 3, 30),
    ]
    [m] = prod.migrations
    assert (m.row.phase, m.step, m.new_traffic) == ("primary-new", 3, 100)


def test_migration_traffic_is_what_the_routing_gives_not_the_phase_weight(small: Path) -> None:
    """With `routing: service` a plain Service splits by ready pods: at shift-30 with 3 + 3
    replicas each track gets 50 %, and the report must say so (as plan does), not 70/30."""
    b = small / "teams" / "b.yaml"
    b.write_text(
        b.read_text()
        .replace("    routing: gateway\n", "    routing: service\n")
        .replace("    gateway: {parentRefs: [{name: gw, namespace: gw}]}\n", "")
    )
    dev = compute(small).envs[0]
    [m] = dev.migrations
    assert m.new_traffic == 50
    assert [(t.vendor, t.weight, t.traffic) for t in m.row.tracks] == [
        ("nvidia", 70, 50),
        ("ascend", 30, 50),
    ]
    md = report(ReportOptions(small, fmt="markdown", env="dev")).text
    assert "nvidia: 3, 50 % (weight 70 %), 3; ascend: 3, 50 % (weight 30 %), 3" in md
    assert "(50 % on ascend)" in md


def test_only_services_with_two_tracks_are_migrations(small: Path) -> None:
    b = (small / "teams" / "b.yaml").read_text()
    one = (
        "  one:\n    images: {nvidia: 'x:cuda'}\n    vendorMounts: false\n"
        "    tracks:\n      nvidia: {devicesPerReplica: 1, replicas: 1}\n"
    )
    (small / "teams" / "b.yaml").write_text(b + one)
    dev = compute(small).envs[0]
    assert [m.row.service for m in dev.migrations] == ["s"]
    assert [s.service for s in dev.plan.services] == ["one", "s"]


def test_numbers_are_plans_numbers() -> None:
    """The report shows what `plan` prints: the same rows, from the same function."""
    planned = plan.plan(EXAMPLE_VALUES)
    figures = compute(EXAMPLE_VALUES)
    assert [e.env for e in figures.envs] == [layer_key(e.env, e.cluster) for e in planned.envs]
    for mine, theirs in zip(figures.envs, planned.envs, strict=True):
        assert [m.row for m in mine.migrations] == [s for s in theirs.services if len(s.tracks) > 1]
        assert {r.vendor: r.needed for r in mine.vendors if r.needed is not None} == {
            c.vendor: c.at_once for c in theirs.capacity
        }


def test_one_environment_and_its_findings(small: Path) -> None:
    figures = compute(small, "prod")
    assert [e.env for e in figures.envs] == ["prod"]
    with pytest.raises(UsageError, match="unknown environment 'qa'; known: dev, prod"):
        compute(small, "qa")


# ----------------------------------------------------------------------------------- the page


class Page(HTMLParser):
    """What a browser would fetch or run: tags with src/href, scripts, stylesheets."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "data", "action") and value is not None:
                self.refs.append((tag, name, value))


def test_page_is_self_contained_and_links_findings(small: Path) -> None:
    out = small.parent / "site" / "report.html"
    result = report(ReportOptions(small, out=out))
    text = out.read_text(encoding="utf-8")
    assert text == result.text and (result.errors, result.warnings) == (
        0,
        2,
    )  # CAP001 in dev and, with other numbers, in prod
    page = Page()
    page.feed(text)
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    remote = [r for r in page.refs if not r[2].startswith(("#", "../"))]
    assert remote == [], remote
    # findings link to the values file, relative to the page's folder
    assert ("a", "href", "../values/teams/b.yaml") in page.refs
    assert ">values/teams/b.yaml:1:17</a>" in text
    assert text.count('<figure class="chart"') == 8  # four charts per environment
    assert 'data-series="capacity,quotas,workloads"' in text
    assert 'data-series="ascend,nvidia,baseline"' in text


def test_a_fleet_without_teams_or_services(tmp_path: Path) -> None:
    files = {k: v for k, v in REPORT_TREE.items() if not k.startswith(("teams/", "environments/"))}
    files["environments/dev.yaml"] = files["environments/prod.yaml"] = "{}\n"
    values = tree(tmp_path / "repo", files, defaults=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not even a Matplotlib warning about empty axes
        text = report(ReportOptions(values)).text
    assert text.count('<figure class="chart"') == 2  # capacity vs. quotas only, per environment
    assert text.count("No team in this environment.") == 2
    assert text.count("No service with two or more tracks in this environment.") == 2


def test_link_base_points_at_the_line(small: Path) -> None:
    res = report(ReportOptions(small, fmt="markdown", link_base="https://forge.example/r/blob/c1/"))
    assert (
        "[`values/teams/b.yaml:1:17`](https://forge.example/r/blob/c1/values/teams/b.yaml#L1)"
        in (res.text)
    )
    plain = report(ReportOptions(small, fmt="markdown")).text
    assert "- **CAP001 warning** `values/teams/b.yaml:1:17`: quotas for nvidia" in plain


def test_text_from_values_is_escaped(small: Path) -> None:
    """Findings quote what users wrote: HTML-escaped in the page, neutral in Markdown. (The schema
    keeps markup out of names today; the page must not depend on it.)"""
    figures = compute(small)
    figures.findings.append(
        Finding("X001", "value '<b>x|y</b>'", Location("values/teams/a.yaml", 2, 3))
    )
    links = page.Links(small, None, None)
    made = inputs.gather(small)
    html = page.render(figures, made, links, "html")
    assert "value &#39;&lt;b&gt;x|y&lt;/b&gt;&#39;" in html and "<b>x" not in html
    md = page.render(figures, made, links, "markdown")
    assert "value '&lt;b&gt;x\\|y&lt;/b&gt;'" in md


def test_same_inputs_same_bytes(small: Path) -> None:
    first = report(ReportOptions(small)).text
    assert report(ReportOptions(small)).text == first


def test_report_states_its_inputs(small: Path) -> None:
    repo = small.parent
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "values"], check=True)
    head = subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    text = report(ReportOptions(small)).text
    assert f"at commit {head[:12]} (" in text and f"<code>{head}</code>" in text
    assert "with uncommitted changes" not in text
    for tool in ("Python 3.", "accel-gitops ", "Jinja2 3.", "Matplotlib 3.", "git 2."):
        assert tool in text
    (small / "teams" / "a.yaml").write_text("quota: {nvidia: 1}\n")
    assert "with uncommitted changes" in report(ReportOptions(small)).text


# ----------------------------------------------------------------------------------------- CLI


def test_cli_writes_html_or_markdown(small: Path, tmp_path: Path) -> None:
    code, out, err = cli_streams(
        "report", "--values", str(small), "--out", str(tmp_path / "r.html")
    )
    assert (code, out) == (0, "")
    assert err == f"wrote {tmp_path / 'r.html'} (0 error(s), 2 warning(s))\n"
    assert (tmp_path / "r.html").read_text().startswith("<!doctype html>")
    code, out, _ = cli_streams("report", "--values", str(small), "--out", str(tmp_path / "r.md"))
    assert code == 0 and (tmp_path / "r.md").read_text().startswith("# Fleet report: small\n")
    code, out, _ = cli_streams(
        "report", "--values", str(small), "--output", "markdown", "--env", "dev"
    )
    assert code == 0 and "## Environment dev" in out and "## Environment prod" not in out
    assert "| b/s | nvidia → ascend (30 % on ascend) |" in out


def test_cli_errors_exit_1_and_still_write(small: Path, tmp_path: Path) -> None:
    (small / "teams" / "b.yaml").write_text(
        (small / "teams" / "b.yaml")
        .read_text()
        .replace("quota: {nvidia: 4, ascend: 3}", "quota: {nvidia: 4, ascend: 1}")
    )
    code, _, err = cli_streams("report", "--values", str(small), "--out", str(tmp_path / "r.html"))
    assert code == 1, err
    assert "(1 error(s), 2 warning(s))" in err  # dev and prod overcommit by different amounts
    text = (tmp_path / "r.html").read_text()
    assert "MIG004" in text and "needs 3 ascend devices" in text


def test_cli_usage_errors_exit_2(small: Path) -> None:
    code, _, err = cli_streams("report", "--values", str(small), "--env", "qa")
    assert code == 2 and err == "error: unknown environment 'qa'; known: dev, prod\n"
    code, _, err = cli_streams("report", "--values", str(small), "--baseline", "kunlun")
    assert code == 2 and "baseline vendor 'kunlun' has no costWeight" in err


# --------------------------------------------------------------------------------------- speed


def test_example_and_300_teams_render_within_seconds(tmp_path: Path) -> None:
    """CPU seconds of this process: wall time on 2 cores shared with the other tests (and, here,
    with other work) measures the neighbours. Measured: about 1 s for the example and 2.5 s for
    300 teams (docs/report.md)."""
    start = time.process_time()
    example = report(ReportOptions(EXAMPLE_VALUES, out=tmp_path / "example.html"))
    assert time.process_time() - start < 5
    # Two CAP001 overcommit warnings and NODE003 (Ascend's unprefixed accelerator-type label).
    assert (example.errors, example.warnings) == (0, 3)
    values = tmp_path / "fleet" / "values"
    make_values(values, 300)
    start = time.process_time()
    big = report(ReportOptions(values, out=tmp_path / "fleet.html"))
    took = time.process_time() - start
    assert took < 8, f"300 teams took {took:.1f} CPU seconds"
    text = big.text
    assert text.count('<figure class="chart"') == 12  # three environments
    assert "the 40 teams of largest cost-weighted allocation, of 300" in text
    assert text.count("<tr><td>team-") == 3 * 300  # every team in the tables
    assert len(text) < 3_000_000  # a page a browser opens at once


def test_a_section_per_cluster_titled_with_its_labels(tmp_path: Path) -> None:
    """TWO_CLUSTERS: one section per cluster of prod, its labels in the title."""
    figures = compute(tree(tmp_path, TWO_CLUSTERS, fleet=PROD_FLEET))
    assert [(e.env, e.slug, e.title) for e in figures.envs] == [
        ("prod/domestic", "prod-domestic", "Environment prod, cluster domestic (region=cn-north)"),
        ("prod/main", "prod-main", "Environment prod, cluster main"),
    ]


def test_a_migration_across_clusters_in_each_cluster_s_strip(tmp_path: Path) -> None:
    """CROSS_TEAM's chat at shift-30: each cluster's strip shows the one phase, every track
    with its cluster, and where the traffic is split."""
    values_dir = cross_clusters(tmp_path, phase="shift-30")
    envs = {e.env: e for e in compute(values_dir).envs}
    for layer in ("prod/main", "prod/domestic"):
        [m] = envs[layer].migrations
        assert (m.row.phase, m.step, m.new_traffic) == ("shift-30", 2, 30)
        assert [(t.vendor, t.cluster, t.replicas, t.weight) for t in m.row.tracks] == [
            ("nvidia", "main", 2, 70),
            ("ascend", "domestic", 2, 30),
        ]
    md = report(ReportOptions(values_dir, fmt="markdown", env="prod/domestic")).text
    assert (
        "| gateway across clusters (HTTPRoute on main) | nvidia in main: 2, 70 %, 2; ascend in "
        "domestic: 2, 30 %, 2 |"
    ) in md
    html = report(ReportOptions(values_dir, env="prod/main")).text
    assert "across clusters: its HTTPRoute on cluster main" in html
    assert "ascend (cluster domestic): 2 replicas, 30 % traffic" in html
