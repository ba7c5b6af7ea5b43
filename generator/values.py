"""Load the values tree: read safely, validate each file against its schema, layer, resolve.

Layering, lowest first: built-in catalog entry < vendor/team file < environment override.
Every problem becomes a Finding; loading goes on so that one run reports them all.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from . import schemadefs
from .errors import Finding, FindingsError, Location, UsageError, has_errors
from .merge import Doc, merge_docs
from .model import (
    BASE_ENV,
    DEVICE_PLUGIN_PATH,
    DevicePlugin,
    Fleet,
    FleetView,
    Pool,
    Taint,
    Team,
    Values,
    Vendor,
    node_agent,
)
from .schemacache import SchemaCache
from .yamlio import SourceMap, YamlInputError, YamlPath, json_path, load_file, load_text

KIND_DIRS = {"vendors": "vendor", "teams": "team", "environments": "environment"}


@dataclass
class Parsed:
    kind: str
    name: str  # file stem
    file: str  # display path, relative to the values directory's parent
    data: Any
    smap: SourceMap


@functools.cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = schemadefs.SCHEMAS[kind]
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)  # type: ignore[no-any-return]


def _schema_findings(kind: str, data: Any, smap: SourceMap) -> list[Finding]:
    out: list[Finding] = []
    for error in _validator(kind).iter_errors(data):
        out.append(_finding_from_error(error, smap))
    return out


def _finding_from_error(error: ValidationError, smap: SourceMap) -> Finding:
    if error.context:
        error = best_match(error.context)
    validator = str(error.validator)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    path: YamlPath = tuple(error.absolute_path)
    message = error.message
    key = False
    hint = ""
    if validator == "additionalProperties" and isinstance(error.instance, dict):
        props = schema.get("properties", {})
        extra = sorted(k for k in error.instance if k not in props)
        if extra:
            path = (*path, extra[0])
            key = True
            message = f"unknown key {extra[0]!r}"
            if props:
                hint = "known keys here: " + ", ".join(sorted(props))
    elif validator == "propertyNames":
        key = True
        bad = error.instance
        path = (*path, bad) if isinstance(bad, str) else path
        message = f"invalid name {bad!r}: {error.message}"
    elif validator == "required":
        hint = "add it"
    elif validator == "type" and isinstance(error.instance, bool | int | float):
        hint = "quote the value if you meant a string"
    return Finding("VAL001", message, smap.locate(path, key=key), json_path(path), hint)


def _display(path: Path, values_dir: Path) -> str:
    try:
        return str(Path(values_dir.name) / path.relative_to(values_dir))
    except ValueError:
        return str(path)


def _discover(values_dir: Path, findings: list[Finding]) -> Iterator[tuple[str, Path]]:
    fleet = values_dir / "fleet.yaml"
    if not fleet.is_file():
        findings.append(
            Finding(
                "VAL002",
                "missing fleet.yaml",
                Location(_display(fleet, values_dir)),
                hint="every values tree starts with fleet.yaml",
            )
        )
    else:
        yield "fleet", fleet
    for entry in sorted(values_dir.iterdir()):
        if entry.name == "fleet.yaml" or entry.name.startswith("."):
            continue
        if entry.is_dir() and entry.name in KIND_DIRS:
            for file in sorted(entry.iterdir()):
                if file.name.startswith("."):
                    continue
                if file.is_file() and file.suffix == ".yaml":
                    yield KIND_DIRS[entry.name], file
                else:
                    findings.append(
                        Finding(
                            "VAL002",
                            "unexpected entry in the values tree",
                            Location(_display(file, values_dir)),
                            hint="values files end in .yaml"
                            if file.suffix == ".yml"
                            else "remove it or move it out of values/",
                        )
                    )
            continue
        findings.append(
            Finding(
                "VAL002",
                "unexpected entry in the values tree",
                Location(_display(entry, values_dir)),
                hint="expected fleet.yaml and the folders " + ", ".join(sorted(KIND_DIRS)),
            )
        )


@functools.cache
def catalog() -> dict[str, tuple[Any, SourceMap]]:
    """The built-in vendor catalog, parsed with positions (findings can point into it)."""
    out: dict[str, tuple[Any, SourceMap]] = {}
    folder = resources.files("generator") / "catalog"
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".yaml"):
            name = item.name.removesuffix(".yaml")
            out[name] = load_text(item.read_bytes(), f"generator/catalog/{item.name}")
    return out


def _parse_all(
    values_dir: Path,
    findings: list[Finding],
    broken: set[tuple[str, str]],
    cache: SchemaCache,
) -> list[Parsed]:
    """Parse and schema-check every file; `broken` collects (kind, name) of unusable ones."""
    parsed: list[Parsed] = []
    for kind, path in _discover(values_dir, findings):
        display = _display(path, values_dir)
        try:
            data, smap = load_file(path, display)
        except YamlInputError as exc:
            findings.append(exc.finding)
            broken.add((kind, path.stem))
            continue
        if data is None:
            data = {}
        key = cache.key(kind, path.read_bytes())  # the bytes load_file just parsed
        errs = [] if cache.is_clean(key) else _schema_findings(kind, data, smap)
        if not errs:
            cache.mark_clean(key)
        findings.extend(errs)
        if errs:
            broken.add((kind, path.stem))
            continue
        name = path.stem
        if kind != "fleet":  # the other files' names are identities
            bad = _dns_name_finding(name, display)
            if bad:
                findings.append(bad)
                continue
        parsed.append(Parsed(kind, name, display, data, smap))
    return parsed


def _dns_name_finding(name: str, display: str) -> Finding | None:
    if re.fullmatch(schemadefs.DNS_LABEL, name):
        return None
    return Finding(
        "NAME001",
        f"file name {name!r} is not a valid DNS-1123 label",
        Location(display),
        hint="use lower-case letters, digits and '-'",
    )


# ---- resolving docs into the typed model --------------------------------------------------


class _Resolver:
    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings

    def need(self, doc: Doc, path: YamlPath, what: str, hint: str) -> Any:
        value = doc.get(*path)
        if value in (None, "", [], {}):
            self.findings.append(
                Finding("VAL003", f"{what} is not set", doc.locate(path), json_path(path), hint)
            )
        return value

    def vendor(self, vendor_id: str, doc: Doc, in_catalog: bool = True) -> Vendor | None:
        before = len(self.findings)
        where = f"values/vendors/{vendor_id}.yaml"
        resource = self.need(doc, ("resourceName",), "resourceName", f"set resourceName in {where}")
        selector_label = self.need(
            doc, ("selectorLabel",), "selectorLabel", f"set selectorLabel in {where}"
        )
        model_label = self.need(doc, ("modelLabel",), "modelLabel", f"set modelLabel in {where}")
        node_labels = doc.get("nodeLabels", default={}) or {}
        if selector_label and selector_label not in node_labels:
            self.findings.append(
                Finding(
                    "VAL003",
                    f"selectorLabel {selector_label!r} is not one of nodeLabels",
                    doc.locate(("selectorLabel",)),
                    "$.selectorLabel",
                    f"add {selector_label} to nodeLabels so the vendor's pools can be selected",
                )
            )
        dp = doc.get("devicePlugin", default={}) or {}
        for key in ("name", "image", "version", "namespace"):
            self.need(
                doc,
                ("devicePlugin", key),
                f"devicePlugin.{key}",
                f"set devicePlugin.{key} in {where} (the catalog has no default for it)",
            )
        self.plugin_needs(vendor_id, doc, in_catalog)
        pools_raw = doc.get("pools", default=[]) or []
        if not pools_raw:
            self.need(doc, ("pools",), "pools", f"list the vendor's node pools in {where}")
        vendor_taints = tuple(_taint(t) for t in doc.get("taints", default=[]) or [])
        pools = []
        names: dict[str, int] = {}
        for i, raw in enumerate(pools_raw):
            if raw["name"] in names:
                self.findings.append(
                    Finding(
                        "NAME002",
                        f"pool name {raw['name']!r} is used twice",
                        doc.locate(("pools", i, "name")),
                        f"$.pools[{i}].name",
                        "give every pool of a vendor its own name",
                    )
                )
            names[raw["name"]] = i
            nodes = tuple(raw.get("nodes", []))
            labels = {
                **node_labels,
                **({model_label: raw["model"]} if model_label else {}),
                **raw.get("labels", {}),
            }
            taints = tuple(_taint(t) for t in raw["taints"]) if "taints" in raw else vendor_taints
            pools.append(
                Pool(
                    index=i,
                    name=raw["name"],
                    model=raw["model"],
                    devices_per_node=raw["devicesPerNode"],
                    nodes=nodes,
                    node_count=len(nodes) if nodes else int(raw.get("nodeCount", 0)),
                    pci_devices=tuple(raw.get("pciDevices", [])),
                    labels=labels,
                    taints=taints,
                )
            )
        if len(self.findings) > before:
            return None
        return Vendor(
            id=vendor_id,
            display_name=doc.get("displayName", default=vendor_id),
            resource_name=resource,
            pci_vendor=doc.get("pciVendor", default=""),
            selector_label=selector_label,
            model_label=model_label,
            node_labels=dict(node_labels),
            taints=vendor_taints,
            cost_weight=float(doc.get("costWeight", default=1.0)),
            device_plugin=DevicePlugin(dp["name"], dp["namespace"], node_agent(dp)),
            exporter=dict(doc.get("exporter", default={}) or {}),
            pools=tuple(pools),
            doc=doc,
        )

    def plugin_needs(self, vendor_id: str, doc: Doc, in_catalog: bool) -> None:
        """What a device plugin needs to work, which only a catalog entry gives for free: the
        kubelet's device-plugin directory mounted (the plugin registers and serves its socket
        there) and, for a vendor outside the catalog, taints that keep other pods off its nodes."""
        where = f"values/vendors/{vendor_id}.yaml"
        dp = doc.get("devicePlugin", default={}) or {}
        if dp.get("image") and not node_agent(dp).mounts_host_path(DEVICE_PLUGIN_PATH):
            path: YamlPath = ("devicePlugin", "volumeMounts")
            self.findings.append(
                Finding(
                    "VAL003",
                    f"vendor {vendor_id}: devicePlugin does not mount the kubelet's device-plugin "
                    f"directory {DEVICE_PLUGIN_PATH}, so the plugin cannot register",
                    doc.anchor(path, ("devicePlugin", "volumes"), ("devicePlugin",)),
                    json_path(path),
                    f"add a hostPath volume for {DEVICE_PLUGIN_PATH} and a volumeMount of it at "
                    f"the same path under devicePlugin in {where}, or start from a catalog "
                    "entry with `catalog: <entry>`",
                )
            )
        pools = doc.get("pools", default=[]) or []
        untainted = not doc.get("taints") and any(not p.get("taints") for p in pools)
        if not in_catalog and untainted:
            self.findings.append(
                Finding(
                    "VAL003",
                    f"vendor {vendor_id} is not in the built-in catalog and gives no taints: "
                    "pods without accelerators would be scheduled onto its nodes",
                    doc.anchor(("taints",), ("pools",)),
                    "$.taints",
                    f"add taints (key, value, effect) in {where}, or start from a catalog entry "
                    "with `catalog: <entry>` (known: " + ", ".join(sorted(catalog())) + ")",
                )
            )

    def team(self, name: str, doc: Doc) -> Team:
        return Team(
            name=name,
            namespaces=tuple(doc.get("namespaces", default=[name])),
            owners=tuple(doc.get("owners", default=[])),
            pod_security=doc.get("podSecurity", default="baseline"),
            quota={k: int(v) for k, v in sorted((doc.get("quota", default={}) or {}).items())},
            doc=doc,
        )

    def fleet(self, doc: Doc) -> Fleet:
        d = doc.data
        git = d["git"]
        argo = d.get("argocd", {})
        return Fleet(
            name=d["name"],
            kubernetes_version=d["kubernetesVersion"],
            environments=tuple(d["environments"]),
            repo_url=git["repoURL"],
            target_revision=git["targetRevision"],
            repo_path=git.get("path", ""),
            argocd_namespace=argo.get("namespace", "argocd"),
            # Not Argo CD's built-in "default" project: the fleet renders its project.
            argocd_project=argo.get("project", d["name"]),
            destination_server=argo.get("destinationServer", "https://kubernetes.default.svc"),
            automated_sync=bool(argo.get("automatedSync", True)),
            node_config_method=d.get("nodeConfig", {}).get("method", "nfd"),
            allow_overcommit=bool(d.get("capacity", {}).get("allowOvercommit", False)),
            doc=doc,
        )


def _taint(raw: dict[str, str]) -> Taint:
    return Taint(key=raw["key"], effect=raw["effect"], value=raw.get("value", ""))


def _catalog_doc(entry: str) -> Doc | None:
    cat = catalog()
    if entry not in cat:
        return None
    data, smap = cat[entry]
    return Doc.from_source(data, smap, record_source=False)


def load(values_dir: Path, schema_cache: Path | None = None) -> Values:
    """Load and resolve the whole tree, or raise FindingsError with every problem found.

    `schema_cache`: a file that keeps clean schema verdicts by content (schemacache.py)."""
    if not values_dir.is_dir():
        raise UsageError(
            f"values directory {str(values_dir)!r} does not exist: run from the repository "
            "root or pass --values DIR"
        )
    findings: list[Finding] = []
    broken: set[tuple[str, str]] = set()
    cache = SchemaCache(schema_cache)
    parsed = _parse_all(values_dir, findings, broken, cache)
    cache.save()
    by_kind: dict[str, list[Parsed]] = {k: [] for k in ("fleet", "vendor", "team", "environment")}
    for p in parsed:
        by_kind[p.kind].append(p)
    if not by_kind["fleet"]:
        raise FindingsError(
            findings or [Finding("VAL002", "no usable fleet.yaml", Location(values_dir.name))]
        )
    fleet_p = by_kind["fleet"][0]
    fleet_doc = Doc.from_source(fleet_p.data, fleet_p.smap)
    environments = list(fleet_doc.data["environments"])

    vendor_docs: dict[str, Doc] = {}
    in_catalog: set[str] = set()
    for p in by_kind["vendor"]:
        own = Doc.from_source(p.data, p.smap)
        entry = p.data.get("catalog", p.name)
        base = _catalog_doc(entry)
        if base is None:
            if "catalog" in p.data:
                findings.append(
                    Finding(
                        "VAL003",
                        f"no built-in catalog entry {entry!r}",
                        p.smap.locate(("catalog",)),
                        "$.catalog",
                        "known entries: " + ", ".join(sorted(catalog())),
                    )
                )
                continue
            base = Doc({})
        else:
            in_catalog.add(p.name)
        vendor_docs[p.name] = merge_docs(base, own)
    team_docs = {p.name: Doc.from_source(p.data, p.smap) for p in by_kind["team"]}

    env_files = {p.name: p for p in by_kind["environment"]}
    for name, p in env_files.items():
        if name not in environments:
            findings.append(
                Finding(
                    "REF002",
                    f"environment {name!r} is not listed in fleet.yaml",
                    Location(p.file),
                    hint="add it to environments in values/fleet.yaml or remove the file",
                )
            )
        for section, known in (("vendors", vendor_docs), ("teams", team_docs)):
            for key in p.data.get(section, {}):
                # A file that failed to load already has its finding: no cascade.
                if key not in known and (section[:-1], key) not in broken:
                    findings.append(
                        Finding(
                            "REF002",
                            f"override for unknown {section[:-1]} {key!r}",
                            p.smap.locate((section, key), key=True),
                            json_path((section, key)),
                            f"known {section}: " + (", ".join(sorted(known)) or "none"),
                        )
                    )

    resolver = _Resolver(findings)

    def view(env: str) -> FleetView:
        env_p = env_files.get(env)
        fdoc, vdocs, tdocs = fleet_doc, dict(vendor_docs), dict(team_docs)
        if env_p is not None:
            fdoc = merge_docs(fdoc, Doc.from_source(env_p.data, env_p.smap, ("fleet",)))
            for section, docs in (("vendors", vdocs), ("teams", tdocs)):
                for name in env_p.data.get(section, {}):
                    if name in docs:
                        over = Doc.from_source(env_p.data, env_p.smap, (section, name))
                        docs[name] = merge_docs(docs[name], over)
        vendors = []
        for vid in sorted(vdocs):
            if vdocs[vid].get("enabled", default=True):
                v = resolver.vendor(vid, vdocs[vid], vid in in_catalog)
                if v is not None:
                    vendors.append(v)
        teams = [
            resolver.team(t, tdocs[t])
            for t in sorted(tdocs)
            if tdocs[t].get("enabled", default=True)
        ]
        return FleetView(
            env, resolver.fleet(fdoc), tuple(vendors), tuple(teams), env_p.file if env_p else None
        )

    base_view = view(BASE_ENV)
    n_base = len(findings)
    envs = {env: view(env) for env in environments}
    # A problem in the base layer shows up again in every environment: report it once.
    findings[n_base:] = [f for f in findings[n_base:] if f not in findings[:n_base]]
    if has_errors(findings):
        raise FindingsError(findings)
    return Values(str(values_dir), base_view, envs)
