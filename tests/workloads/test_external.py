"""The objects a team's workloads use that the fleet does not render (generator/workloads/
external.py): exactly the declared ones a job or service uses, each with its kind, namespace
and values path. preflight (PRE007) and simulate's stand-ins (SIM011) read this list."""

from __future__ import annotations

from pathlib import Path

import yaml

from generator.values import loader as values
from generator.workloads.external import external_uses
from tests.fixtures import DATASET_FLEET, DATASET_TEAM, FLEET, tree, workloads_of

# A second namespace for the service, a ConfigMap it mounts, and one declared object (a Secret
# `unused`) that no workload uses.
TEAM = (
    DATASET_TEAM.replace(
        "  secrets: [registry-creds, hf]\n",
        "  secrets: [registry-creds, hf, unused]\n  configMaps: [serve-config]\n",
    )
    + """\
namespaces: [vision, vision-serve]
services:
  serve:
    namespace: vision-serve
    images: {nvidia: registry.example.com/serve:cuda}
    tracks: {nvidia: {devicesPerReplica: 1, replicas: 1}}
    volumes:
      - {name: config, configMap: {name: serve-config}}
    volumeMounts:
      - {name: config, mountPath: /etc/serve}
    envFrom: [{secretRef: {name: hf}}]
"""
)


def test_each_declared_object_a_workload_uses_once_per_use_with_its_namespace_and_path(
    tmp_path: Path,
) -> None:
    fleet = yaml.safe_load(FLEET)
    fleet.update(DATASET_FLEET)
    files = {
        "teams/vision.yaml": TEAM.replace("quota: {nvidia: 4}", "quota: {nvidia: 5}"),
        "fleet.yaml": yaml.safe_dump(fleet, sort_keys=False),
    }
    view = values.load(tree(tmp_path, files)).envs["prod"]
    got = sorted(
        (u.kind, u.namespace, u.name, u.team.name, ".".join(map(str, u.path)))
        for u in external_uses(workloads_of(view))
    )
    assert got == [
        (
            "ConfigMap",
            "vision-serve",
            "serve-config",
            "vision",
            "services.serve.volumes.0.configMap.name",
        ),
        (
            "PersistentVolumeClaim",
            "vision",
            "imagenet",
            "vision",
            "jobs.train.volumes.0.persistentVolumeClaim.claimName",
        ),
        ("Secret", "vision", "hf", "vision", "jobs.train.env.HF_TOKEN.valueFrom.secretKeyRef.name"),
        ("Secret", "vision", "registry-creds", "vision", "jobs.train.imagePullSecrets.0.name"),
        ("Secret", "vision-serve", "hf", "vision", "services.serve.envFrom.0.secretRef.name"),
        ("ServiceAccount", "vision", "trainer", "vision", "jobs.train.serviceAccountName"),
    ]


def test_a_team_that_declares_nothing_uses_nothing_external(tmp_path: Path) -> None:
    view = values.load(tree(tmp_path)).envs["prod"]
    assert external_uses(workloads_of(view)) == []
