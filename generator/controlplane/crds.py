"""The CRDs the local control plane installs: exactly the pinned ones.

Every CRD the fleet's kinds need comes from the same pinned sources as the offline schemas
(gotools/schemas.lock.yaml; `tools install` keeps each CRD object in
<tools dir>/schemas/crds/manifests). Node Feature Discovery's CRDs come from the module
nfd-master is built from (gotools/nfd/go.mod),
so the API server serves what the running nfd-master reads.
"""

from __future__ import annotations

import json

import yaml

from generator.controlplane.api import Obj, served_kind
from generator.controlplane.sources import nfd_crd_file
from generator.toolchain import errors, registry
from generator.toolchain.errors import ToolMissing


def nfd_crds() -> list[Obj]:
    docs = yaml.safe_load_all(nfd_crd_file().read_text(encoding="utf-8"))
    return [d for d in docs if isinstance(d, dict) and d.get("kind") == "CustomResourceDefinition"]


def pinned_crds() -> list[Obj]:
    """Every pinned CRD, NFD's at nfd-master's version; sorted by name."""
    folder = registry.crd_manifests_dir()
    if not folder.is_dir():
        raise ToolMissing("CRD manifests", errors.Install(), [str(folder)])
    crds = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in folder.glob("*.json")}
    for crd in nfd_crds():
        crds[str(crd["metadata"]["name"])] = crd
    return [crds[name] for name in sorted(crds)]


def needed_crds(docs: list[Obj]) -> list[Obj]:
    """The pinned CRDs that serve a kind among ``docs`` (installing all of them would cost half
    a minute: the API server rebuilds its OpenAPI document for each)."""
    kinds = {(str(d.get("apiVersion")), str(d.get("kind"))) for d in docs}
    return [crd for crd in pinned_crds() if served_kind(crd) & kinds]
