"""`traffic/<env>.json`: the traffic split of each service across clusters whose routing is
external (values `crossCluster.routing: external`), as data for the automation of a global load
balancer (DNS weights, a GLB's Terraform, F5 or Route 53 scripts) to read. No cluster holds both
tracks, so no Kubernetes object can split the traffic; the fleet says what the split is, and
each track's cluster still renders its track (docs/multi-cluster.md, "The traffic file").

One file per environment that has such a service, at the root of the rendered tree beside base/
and overlays/, so that `render --check` and validate's drift check hold it to the values like
every other rendered file. Its JSON Schema is schemas/traffic.schema.json (values/schema.py
TRAFFIC).
"""

from __future__ import annotations

import json
from typing import Any

from generator.builders.fleet import Build
from generator.values.model import Values
from generator.workloads.model import Service
from generator.workloads.phases import plan_service

FOLDER = "traffic"
FORMAT = 1  # the document's `format`: raised when a field changes meaning or goes


def path_of(env: str) -> str:
    return f"{FOLDER}/{env}.json"


def env_of(rel: str) -> str | None:
    """The environment of a traffic file's path; None for any other path."""
    folder, _, name = rel.partition("/")
    if folder != FOLDER or "/" in name or not name.endswith(".json"):
        return None
    return name.removesuffix(".json")


def documents(values: Values, builds: dict[str, Build]) -> dict[str, str]:
    """Each environment's traffic file by its path, for the environments that have a service
    split by an external load balancer."""
    out = {}
    for env in sorted({v.env for v in values.envs.values()}):
        views = values.views_of(env)
        destinations = {v.cluster.name: v.fleet.destination for v in views if v.cluster}
        # The service is in the view of each of its tracks' clusters: the same model in each.
        found: dict[tuple[str, str], tuple[str, Service]] = {}
        for view in views:
            workloads = builds[view.key].workloads
            for team in view.teams:
                # Only a team with a service across clusters in a cluster's view has one with
                # `cross` (workloads/model.py): the others' workload models are not made for
                # nothing (10,000 of them at 20 clusters x 500 teams, 0.3 s of every render).
                if view.cluster is None or not team.crossing:
                    continue
                for svc in workloads.of(team).services:
                    if svc.cross is not None and svc.cross.routing == "external":
                        found.setdefault((svc.namespace, svc.name), (team.name, svc))
        if found:
            services = [
                _service(team, svc, destinations) for _, (team, svc) in sorted(found.items())
            ]
            doc = {"format": FORMAT, "environment": env, "services": services}
            out[path_of(env)] = json.dumps(doc, indent=2) + "\n"
    return out


def _service(team: str, svc: Service, destinations: dict[str, dict[str, str]]) -> dict[str, Any]:
    assert svc.cross is not None  # documents() picks services across clusters
    return {
        "team": team,
        "namespace": svc.namespace,
        "service": svc.name,
        "hostname": svc.cross.hostname,
        "phase": svc.phase,
        "tracks": [
            {
                "vendor": p.vendor,
                "cluster": p.cluster,
                "destination": destinations[p.cluster],
                # The track's Service in its cluster, which the load balancer sends requests to
                # (through the cluster's ingress, as the site wires it).
                "service": {
                    "name": f"{svc.name}-{p.vendor}",
                    "namespace": svc.namespace,
                    "port": svc.port,
                },
                "replicas": p.replicas,
                "weight": p.weight,
            }
            for p in plan_service(svc)
        ],
    }
