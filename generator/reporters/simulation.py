"""How a simulation reads: tables per environment, then its findings in any findings format
(reporters/findings.py FORMATS); json is one document with every row."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, TextIO

from generator.findings import split_layer
from generator.reporters import findings as reporter
from generator.simulate.result import EnvReport, SimulationResult


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISMATCH"


def _placed(placed: dict[str, int]) -> str:
    return ", ".join(f"{where} x{n}" for where, n in placed.items()) or "-"


def _track_rows(tracks: list[dict[str, Any]], phase: bool = False) -> list[list[str]]:
    """The table of track rows (checks.track_row), with the phase of each (`phase`)."""
    head = ["service", *(["phase"] if phase else []), "track", "cluster", "weight", "ready"]
    rows = [[*head, "plan", "placed", ""]]
    for t in tracks:
        rows.append(
            [
                t["service"],
                *([t["phase"]] if phase else []),
                t["track"],
                t["cluster"] or "-",
                str(t["weight"]),
                str(t["ready"]),
                str(t["plan"]),
                _placed(t["placed"]),
                _mark(t["ok"]),
            ]
        )
    return rows


def env_text(rep: EnvReport) -> str:
    env, cluster = split_layer(rep.env)
    where = f"environment {env}" + (f", cluster {cluster}" if cluster else "")
    lines = [where + (f", on Kubernetes {rep.kubernetes}" if rep.kubernetes else "")]
    lines.append(" nodes: labels and taints as nfd-master set them, against the pool's")
    rows = [["node", "what", "labels", "taints", ""]]
    for n in rep.nodes:
        labels = ",".join(f"{k.rsplit('/', 1)[-1]}={v}" for k, v in sorted(n.labels.items()))
        rows.append([n.name, n.what, labels or "-", ",".join(n.taints) or "-", _mark(n.ok)])
    lines += _table(rows)
    if rep.probes:
        lines.append(" probe pods (no tolerations), one pinned to each node")
        rows = [["node", "what", "scheduled", ""]]
        rows += [
            [p["node"], p["what"], "yes" if p["landed"] else "no", _mark(p["ok"])]
            for p in rep.probes
        ]
        lines += _table(rows)
    if rep.plugins:
        lines.append(
            " vendor DaemonSets: on exactly their vendor's nodes (nfd-worker: on every node)"
        )
        rows = [["daemonset", "vendor", "on nodes", ""]]
        rows += [
            [p["daemonset"], p["vendor"], ",".join(p["nodes"]) or "-", _mark(p["ok"])]
            for p in rep.plugins
        ]
        lines += _table(rows)
    if rep.pods:
        lines.append(" workload pods in the steady state (services first, then every job)")
        rows = [["workload", "pod", "vendor", "node", "state", ""]]
        for p in rep.pods:
            state = p.phase or "-"
            if p.reason:
                state = f"{state}: {p.reason}" if p.phase else p.reason
            state = state[:120] + (f" (claimed {p.devices})" if p.devices else "")
            mark = "waits" if p.waits and not p.ok else _mark(p.ok)
            rows.append([p.workload, p.pod, p.vendor or "-", p.node or "-", state, mark])
        lines += _table(rows)
    if rep.admissions:
        lines.append(" Kueue's admission per queued workload (its controller ran)")
        rows = [["workload", "values", "queue", "admission", ""]]
        # A workload that Kueue admits alone but not beside the team's other jobs waits (SIM010,
        # a warning), as its pod rows say.
        waiting = {p.workload for p in rep.pods if p.waits and not p.ok}
        rows += [
            [
                a["workload"],
                a["values"],
                a["queue"],
                a["admission"][:120],
                "waits" if a["workload"] in waiting and not a["ok"] else _mark(a["ok"]),
            ]
            for a in rep.admissions
        ]
        lines += _table(rows)
    for quotas, when in ((rep.quotas, "Jobs"), (rep.jobset_quotas, "JobSets")):
        if not quotas:
            continue
        lines.append(f" quota used / hard per team, while the services and {when} ran")
        rows = [["team", "namespace", "resource", "used", "hard"]]
        for q in quotas:
            for res, hard in sorted(q["hard"].items()):
                rows.append(
                    [q["team"], q["namespace"], res, str(q["used"].get(res, "0")), str(hard)]
                )
        lines += _table(rows)
    if rep.tracks:
        lines.append(" ready pods per track against plan (the tracks of this cluster)")
        lines += _table(_track_rows(rep.tracks))
    if rep.phases:
        lines.append(
            " each migrating service walked through its phases (--phases), beside the other "
            "services and no job; each phase applied at once, not as a rolling update (a surge "
            "pod's room is not counted)"
        )
        lines += _table(_track_rows(rep.phases, phase=True))
    if rep.applications:
        lines.append(" Argo CD per Application (in wave order; settled: Synced and Healthy)")
        rows = [["application", "wave", "sync", "health", "settled", ""]]
        rows += [
            [
                a["application"],
                str(a["wave"]),
                a["sync"],
                a["health"] + (f" ({a['note']})" if a["note"] else ""),
                a["settled"],
                _mark(a["ok"]),
            ]
            for a in rep.applications
        ]
        lines += _table(rows)
    series = [m for m in rep.metrics if "series" in m]
    if series:
        lines.append(" recorded series per team and vendor: Prometheus against the ResourceQuota")
        rows = [["team", "vendor", "series", "quota says", "prometheus", ""]]
        rows += [
            [
                m["team"],
                m["vendor"],
                m["series"],
                f"{m['want']:g}",
                "-" if m["got"] is None else f"{m['got']:g}",
                _mark(m["ok"]),
            ]
            for m in series
        ]
        lines += _table(rows)
    panels = [m for m in rep.metrics if "panel" in m]
    if panels:
        lines.append(" dashboard: each panel's query as Grafana sends it, answered by Prometheus")
        rows = [["panel", "query", "values"]]
        rows += [[p["panel"], p["legend"], p["values"] or "(no data)"] for p in panels]
        lines += _table(rows)
    alerts = [m for m in rep.metrics if "alert" in m]
    if alerts:
        lines.append(" alerts: instances active in Prometheus against the cluster's state")
        rows = [["alert", "cluster says", "active", ""]]
        rows += [[a["alert"], str(a["want"]), str(a["active"]), _mark(a["ok"])] for a in alerts]
        lines += _table(rows)
    timing = ", ".join(f"{k} {v:.1f} s" for k, v in rep.timings.items())
    lines.append(f" {rep.objects} objects applied; {timing}")
    return "\n".join(lines) + "\n"


def across_text(result: SimulationResult) -> str:
    """Per environment, each service whose tracks run in different clusters at each phase
    walked: every track in its own cluster, gathered from the clusters' reports (each cluster
    was simulated on its own), phase by phase in the order walked."""
    rows: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    clusters: dict[tuple[str, str], set[str]] = {}
    for rep in result.envs:
        env, _ = split_layer(rep.env)
        for t in rep.phases:
            rows.setdefault(env, {}).setdefault((t["service"], t["phase"]), []).append(t)
            clusters.setdefault((env, t["service"]), set()).add(t["cluster"])
    lines = []
    for env, by_phase in rows.items():
        table = [
            t
            for (service, _), group in by_phase.items()
            if len(clusters[(env, service)]) > 1
            for t in group
        ]
        if table:
            lines.append(f"environment {env}: services across clusters, each track in its cluster")
            lines += _table(_track_rows(table, phase=True))
    return "\n".join(lines) + "\n" if lines else ""


def as_json(result: SimulationResult) -> dict[str, Any]:
    envs = []
    for rep in result.envs:
        doc = asdict(rep)
        doc.pop("findings")
        envs.append(doc)
    return {"control_plane_started_in": result.started_in, "environments": envs}


def write(result: SimulationResult, output: str, out: TextIO) -> None:
    """The simulation in `output`: text and github put the tables before the findings (a
    workflow's log shows them; GitHub reads only the annotations), json carries every row in
    its stats, junit holds the findings alone."""
    stats: dict[str, object] = {"environments": len(result.envs)}
    if output == "json":
        stats.update(as_json(result))
    elif output in ("text", "github"):
        for rep in result.envs:
            out.write(env_text(rep))
        out.write(across_text(result))
    reporter.FORMATS[output](reporter.Report("simulate", result.findings, stats), out)
