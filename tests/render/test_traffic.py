"""traffic/<env>.json (generator/render/traffic.py; docs/multi-cluster.md, "The traffic file"):
the split of each service across clusters that a global load balancer routes, written beside
base/ and overlays/, held to the values by `render --check`, and valid by its schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from generator.render.stage import RenderOptions, render
from generator.values import schema
from tests.fixtures import CROSS_EXTERNAL, CROSS_GATEWAY, cross_clusters

EXPECTED = """\
{
  "format": 1,
  "environment": "prod",
  "services": [
    {
      "team": "inference",
      "namespace": "inference",
      "service": "chat",
      "hostname": "chat.example.com",
      "phase": "shift-10",
      "tracks": [
        {
          "vendor": "nvidia",
          "cluster": "main",
          "destination": {
            "server": "https://main.example.com:6443"
          },
          "service": {
            "name": "chat-nvidia",
            "namespace": "inference",
            "port": 8000
          },
          "replicas": 2,
          "weight": 90
        },
        {
          "vendor": "ascend",
          "cluster": "domestic",
          "destination": {
            "name": "domestic"
          },
          "service": {
            "name": "chat-ascend",
            "namespace": "inference",
            "port": 8000
          },
          "replicas": 2,
          "weight": 10
        }
      ]
    }
  ]
}
"""


def test_an_external_split_is_written_as_the_environment_s_traffic_file(tmp_path: Path) -> None:
    values_dir = cross_clusters(tmp_path, phase="shift-10", cross=CROSS_EXTERNAL)
    out = tmp_path / "out"
    render(RenderOptions(values_dir, out))
    assert (out / "traffic" / "prod.json").read_text() == EXPECTED
    jsonschema.Draft202012Validator(schema.SCHEMAS["traffic"]).validate(json.loads(EXPECTED))
    # Each track's cluster still renders its track; no cluster keeps the base's in-cluster
    # route (the base layer is one cluster).
    for cluster in ("main", "domestic"):
        unit = out / "overlays/prod" / cluster / "team-inference"
        assert (unit / "patches/delete-httproute-inference-chat.yaml").is_file()


def test_render_check_catches_a_hand_edit_of_the_traffic_file(tmp_path: Path) -> None:
    values_dir = cross_clusters(tmp_path, phase="shift-10", cross=CROSS_EXTERNAL)
    out = tmp_path / "out"
    render(RenderOptions(values_dir, out))
    edited = EXPECTED.replace('"weight": 90', '"weight": 80')
    (out / "traffic" / "prod.json").write_text(edited)
    drift = render(RenderOptions(values_dir, out, check=True)).drift
    assert drift is not None and drift.changed == ["traffic/prod.json"]


def test_a_service_no_longer_split_externally_takes_its_traffic_file_away(tmp_path: Path) -> None:
    out = tmp_path / "out"
    render(RenderOptions(cross_clusters(tmp_path / "a", cross=CROSS_EXTERNAL), out))
    gateway = cross_clusters(tmp_path / "b", cross=CROSS_GATEWAY)
    drift = render(RenderOptions(gateway, out, check=True)).drift
    assert drift is not None and "traffic/prod.json" in drift.stale
    render(RenderOptions(gateway, out))
    assert not (out / "traffic").exists()
