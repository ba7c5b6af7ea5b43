"""Checks across environments: what several environments render into one place they share.

The other checks read one layer at a time (policy/checks.py); these read every environment at
once, so they run beside them (render/stage.py check_values), not through the memo.

ARG001: environments that name the same Argo CD (`argocd.instance`) must not render an
AppProject or a root Application of one name in one namespace. Each environment's root
Application owns its AppProjects and prunes and self-heals them to its own destinations: two
roots owning one AppProject take it from each other on every sync, and one environment's
Applications are refused the other's destinations in between. Unit Applications are named
`<fleet>-<env>-<unit>`, so they cannot meet unless the roots' names already do.
"""

from __future__ import annotations

from generator.builders.argocd import addons_project, app_name
from generator.findings import CodeInfo, Finding
from generator.values.model import FleetView, Values

CODES = (
    CodeInfo(
        "ARG001",
        "values",
        "error",
        "two environments on one Argo CD (argocd.instance) render an AppProject or root "
        "Application of one name",
    ),
)


def _owned(view: FleetView) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(kind, namespace, name, values path that names it) of what the environment's root owns
    in Argo CD's namespace by a name of its own choosing."""
    fleet = view.fleet
    ns = fleet.argocd_namespace
    return [
        ("AppProject", ns, fleet.argocd_project, ("argocd", "project")),
        ("AppProject", ns, addons_project(view), ("argocd", "project")),
        ("Application", ns, app_name(view, "root"), ("name",)),
    ]


def shared_argocd(values: Values) -> list[Finding]:
    """ARG001 at the later environment (in fleet.yaml's order) of each pair that would own one
    object on one Argo CD: one finding per pair and values key (the project's name makes both
    AppProjects)."""
    seen: dict[tuple[str, str, str, str], str] = {}
    clashes: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    views: dict[str, FleetView] = {}
    for env in values.base.fleet.environments:
        view = values.envs.get(env) or values.hubs.get(env)
        if view is None or not view.fleet.argocd_instance:
            continue
        views[env] = view
        for kind, ns, name, path in _owned(view):
            first = seen.setdefault((view.fleet.argocd_instance, kind, ns, name), env)
            if first != env:
                clashes.setdefault((first, env, path), []).append(f"{kind} {ns}/{name}")
    out: list[Finding] = []
    for (first, env, path), objects in clashes.items():
        fleet = views[env].fleet
        out.append(
            Finding(
                "ARG001",
                # The environment told is named once, by envs (Finding.text).
                f"Argo CD {fleet.argocd_instance!r} also syncs environment {first!r}, which "
                f"renders {', '.join(objects)} too: each root Application would take them over "
                "from the other on every sync (and prune what the other added)",
                fleet.doc.locate(path),
                "$." + ".".join(path),
                f"give each environment its own names: set fleet.argocd.project in "
                f"values/environments/{env}.yaml (e.g. '{fleet.argocd_project}-{env}')"
                if path == ("argocd", "project")
                else "give the environments' fleets distinct names",
                envs=(env,),
            )
        )
    return out
