"""Load the values tree: read safely, validate each file against its schema, layer, resolve.

Layering, lowest first: built-in catalog entry < vendor/team file < environment override.
Every problem becomes a Finding; loading goes on so that one run reports them all, and hands on
what it accepted (`load_all`), so that the checks run beside it (docs/validate.md, "One finding
per root cause").
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import marshal
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.exceptions import ValidationError, best_match

from generator.errors import FindingsError, UsageError
from generator.findings import (
    CodeInfo,
    Finding,
    Location,
    did_you_mean,
    has_errors,
    merge_layers,
)
from generator.values import clusters, filecache, inventory
from generator.values import schema as values_schema
from generator.values.allocation.base import Context, PluginConfig, Sharing, plugin_config
from generator.values.allocation.dra import DRA
from generator.values.allocation.registry import sharing_mode
from generator.values.filecache import FileCache
from generator.values.inventory import Inventory
from generator.values.merge import Doc, merge_docs
from generator.values.model import (
    ACCELERATOR_CLASSES,
    BASE_ENV,
    DEVICE_PLUGIN,
    DEVICE_PLUGIN_PATH,
    EXPORTER,
    DevicePlugin,
    Fleet,
    FleetView,
    Mirrors,
    OperatorPart,
    PciModel,
    Pool,
    Taint,
    Team,
    Values,
    Vendor,
    VendorOperator,
    find_pci_model,
    node_agent,
)
from generator.values.yamlio import (
    SourceMap,
    YamlInputError,
    YamlPath,
    json_path,
    load_text,
)
from generator.vocab.addons import FLEET, SITE

KIND_DIRS = {
    "vendors": "vendor",
    "teams": "team",
    "environments": "environment",
    "inventories": "inventory",
}


@dataclass
class Parsed:
    kind: str
    name: str  # file stem
    file: str  # display path, relative to the values directory's parent
    data: Any
    smap: SourceMap


def _ecma_pattern(
    validator: jsonschema.protocols.Validator, pattern: str, instance: Any, schema: Any
) -> Iterator[ValidationError]:
    """`pattern` with ECMA-262 semantics (jsonschema's own uses Python's re.search)."""
    if validator.is_type(instance, "string") and not values_schema.matches(pattern, instance):
        bad = values_schema.control_characters(instance)
        if bad:
            yield ValidationError(f"{instance!r} contains the control character {bad[0]}")
        else:
            yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = values_schema.SCHEMAS[kind]
    base = jsonschema.validators.validator_for(schema)
    # Our schemas use `pattern` only (directly and under propertyNames), never
    # patternProperties: test_values checks that, so no keyword falls back to Python's re.
    cls = jsonschema.validators.extend(base, {"pattern": _ecma_pattern})
    return cls(schema)  # type: ignore[no-any-return]


def _schema_findings(kind: str, data: Any, smap: SourceMap) -> list[Finding]:
    out: list[Finding] = []
    for error in _validator(kind).iter_errors(data):
        if error.context:
            error = _best(error.context)
        if str(error.validator) == "additionalProperties" and isinstance(error.instance, dict):
            out += _unknown_keys(error, smap)  # every one of them, not the first
        else:
            out.append(_finding_from_error(error, smap))
    return out


def _unknown_keys(error: ValidationError, smap: SourceMap) -> list[Finding]:
    """One finding per key its object does not know, each with the key it likely meant."""
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    props = sorted(schema.get("properties", {}))
    instance = error.instance if isinstance(error.instance, dict) else {}
    out = []
    for extra in sorted(k for k in instance if k not in props):
        path: YamlPath = (*error.absolute_path, extra)
        known = "known keys here: " + ", ".join(props) if props else "remove it"
        hint = did_you_mean(extra, props, known)
        out.append(
            Finding(
                "VAL001",
                f"unknown key {extra!r}",
                smap.locate(path, key=True),
                json_path(path),
                hint,
            )
        )
    return out


def _best(errors: list[ValidationError]) -> ValidationError:
    """The error of an anyOf/oneOf that says most: a branch the value's type fits (a quota of
    -1 is a number below the minimum, not "not an object") before a branch of another type."""
    fits = [e for e in errors if str(e.validator) != "type"]
    found: ValidationError = best_match(fits or errors)
    return found


def _finding_from_error(error: ValidationError, smap: SourceMap) -> Finding:
    if error.context:
        error = _best(error.context)
    validator = str(error.validator)
    schema: dict[str, Any] = error.schema if isinstance(error.schema, dict) else {}
    path: YamlPath = tuple(error.absolute_path)
    message = error.message
    key = False
    hint = ""
    if "propertyNames" in error.relative_schema_path:
        # A key that its map does not allow: point at the key itself.
        key = True
        bad = error.instance
        path = (*path, bad) if isinstance(bad, str) else path
        message = f"invalid name {bad!r}: {error.message}"
        hint = values_schema.PATTERN_HINTS.get(str(schema.get("pattern")), "")
    elif validator == "pattern":
        pattern = str(error.validator_value)
        words = values_schema.PATTERN_HINTS.get(pattern, "")
        allowed = str(schema.get("description", "")) if pattern in values_schema.CHOICES else ""
        if allowed and isinstance(error.instance, str):
            # A value from a fixed set written as a pattern (a phase): the set in words.
            message = f"{error.instance!r} is not one of {allowed}"
        hint = did_you_mean(error.instance, values_schema.CHOICES.get(pattern, ()), words)
    elif validator == "not" and schema.get("description"):
        # A value the schema excludes by name: what the key allows, in the schema's words.
        message = f"{error.instance!r} is not allowed here"
        hint = str(schema["description"])
    elif validator == "required":
        hint = "add it"
    elif validator in ("type", "enum") and path in smap.plain and _wants_text(validator, schema):
        # YAML 1.1 read the unquoted text as a boolean, number or null: never coerce it back.
        raw = smap.plain[path]
        message = (
            f"{raw} is read by YAML 1.1 as {_yaml_type(error.instance)}, not as the text {raw!r}"
        )
        hint = f"quote it: {raw!r}" if "'" not in raw else f'quote it: "{raw}"'
    elif validator == "type" and isinstance(error.instance, bool | int | float):
        hint = "quote the value if you meant a string"
    elif validator == "enum":
        choices = [str(c) for c in schema.get("enum", [])]
        message = f"{error.instance!r} is not one of {', '.join(choices)}"
        hint = did_you_mean(error.instance, choices, "")
    return Finding("VAL001", message, smap.locate(path, key=key), json_path(path), hint)


def _wants_text(validator: str, schema: dict[str, Any]) -> bool:
    if validator == "enum":
        return any(isinstance(v, str) for v in schema.get("enum", []))
    types = schema.get("type")
    return types == "string" or (isinstance(types, list) and "string" in types)


def _yaml_type(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null (no value)"
    return f"the number {value!r}"


def _display(path: Path, values_dir: Path) -> str:
    try:
        return str(Path(values_dir.name) / path.relative_to(values_dir))
    except ValueError:
        return str(path)


def _outside(entry: Path, root: Path, values_dir: Path) -> Finding | None:
    """A symbolic link that loops, or leads out of the values tree: never followed. (Links that
    stay inside are fine.) Every entry is checked, so a folder link is refused as a whole."""
    if not entry.is_symlink():
        return None
    where = Location(_display(entry, values_dir))
    try:
        target = entry.resolve(strict=True)
    except (OSError, RuntimeError):  # a loop, or a link to nothing
        return Finding(
            "VAL002",
            "symbolic link that loops or points to nothing",
            where,
            hint="replace it with the file itself",
        )
    if target == root or root in target.parents:
        return None
    return Finding(
        "VAL002",
        f"symbolic link leads out of the values tree (to {target})",
        where,
        hint="values are read from inside the values tree only: copy the file in",
    )


def _discover(values_dir: Path, findings: list[Finding]) -> Iterator[tuple[str, Path]]:
    root = values_dir.resolve()

    def refused(entry: Path) -> bool:
        bad = _outside(entry, root, values_dir)
        if bad is not None:
            findings.append(bad)
        return bad is not None

    fleet = values_dir / "fleet.yaml"
    if refused(fleet):
        pass
    elif not fleet.is_file():
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
        if entry.name == "fleet.yaml" or entry.name.startswith(".") or refused(entry):
            continue
        if entry.is_dir() and entry.name in KIND_DIRS:
            for file in sorted(entry.iterdir()):
                if file.name.startswith(".") or refused(file):
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


def vendor_operator(raw: dict[str, Any] | None) -> VendorOperator | None:
    """The catalog's `operator` contract, typed; None when the vendor has none."""
    if not raw:
        return None
    parts = {
        component: OperatorPart(
            deploy_label=str(part["deployLabel"]),
            daemon_set=str(part["daemonSet"]),
            pod_labels=dict(part["podLabels"]),
            port=int(part.get("port", 0)),
            port_name=str(part.get("portName", "")),
            config_label=str(part.get("configLabel", "")),
        )
        for component in (DEVICE_PLUGIN, EXPORTER)
        if (part := raw.get(component))
    }
    return VendorOperator(
        str(raw["addon"]),
        parts,
        str(raw.get("runtimeClass", "")),
        tuple(dict(t) for t in raw.get("tolerations", [])),
    )


@functools.cache
def catalog() -> dict[str, tuple[Any, SourceMap]]:
    """The built-in vendor catalog, parsed with positions (findings can point into it)."""
    out: dict[str, tuple[Any, SourceMap]] = {}
    folder = resources.files("generator.values") / "catalog"
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".yaml"):
            name = item.name.removesuffix(".yaml")
            out[name] = load_text(item.read_bytes(), f"generator/values/catalog/{item.name}")
    return out


def _catalog_digest() -> str:
    """The catalog as this process reads it (1.5 ms): the package's data, which the code's
    digest covers too, but a view holds its vendors' entries, so the fingerprint of what the
    views are made of names it itself."""
    rows = [
        (name, data, filecache.table(smap.values), filecache.table(smap.keys))
        for name, (data, smap) in sorted(catalog().items())
    ]
    return hashlib.sha256(marshal.dumps(rows, filecache.MARSHAL_FORMAT)).hexdigest()


def missing_vendor_hint(vendor_id: str, known: Iterable[str]) -> str:
    """The hint of a finding that names a vendor without an enabled vendor file. A vendor of
    the catalog gets its file named: a close name would mislead (with nvidia.yaml deleted,
    nvidia-dra is close to 'nvidia', but its devices are other ones)."""
    listed = "known vendors: " + (", ".join(sorted(known)) or "none")
    if vendor_id in catalog():
        return (
            f"add (or enable) values/vendors/{vendor_id}.yaml: {vendor_id} is in the catalog, so "
            f"its pools are all the file needs; or name another vendor ({listed})"
        )
    return did_you_mean(vendor_id, known, listed)


def _parse_all(
    values_dir: Path,
    findings: list[Finding],
    broken: set[tuple[str, str]],
    cache: FileCache,
    read: list[str],
    teams: dict[str, list[str]] | None = None,
) -> list[Parsed]:
    """Parse and schema-check every file (a clean file's bytes seen before: from `cache`);
    `broken` collects (kind, name) of unusable ones, `read` what each file was (its cache key:
    its kind, display path and bytes, and the code's digest) or why it could not be read, and
    `teams` those of the teams' files, by team name."""
    teams = teams if teams is not None else {}
    parsed: list[Parsed] = []
    for kind, path in _discover(values_dir, findings):
        display = _display(path, values_dir)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            findings.append(
                Finding("YAML001", f"cannot read file: {exc.strerror}", Location(display))
            )
            broken.add((kind, path.stem))
            read.append(f"unreadable\0{kind}\0{display}\0{exc.strerror}")
            if kind == "team":
                teams.setdefault(path.stem, []).append(read[-1])
            continue
        key = cache.key(kind, display, raw)
        read.append(key)
        if kind == "team":
            teams.setdefault(path.stem, []).append(key)
        known = cache.get(key, display)
        if known is not None:
            data, smap = known
        else:
            try:
                data, smap = load_text(raw, display)
            except YamlInputError as exc:
                findings.append(exc.finding)
                broken.add((kind, path.stem))
                continue
            if data is None:
                data = {}
            errs = _schema_findings(kind, data, smap)
            findings.extend(errs)
            if errs:
                broken.add((kind, path.stem))
                continue
            cache.put(key, data, smap)
        name = path.stem
        if kind != "fleet":  # the other files' names are identities
            bad = _dns_name_finding(name, display)
            if bad:
                findings.append(bad)
                broken.add((kind, name))
                continue
        parsed.append(Parsed(kind, name, display, data, smap))
    return parsed


def _dns_name_finding(name: str, display: str) -> Finding | None:
    if values_schema.matches(values_schema.DNS_LABEL, name):
        return None
    bad = values_schema.control_characters(name)
    return Finding(
        "NAME001",
        f"file name {name!r} is not a valid DNS-1123 label"
        + (f": it contains the control character {bad[0]}" if bad else ""),
        Location(display),
        hint="use lower-case letters, digits and '-'",
    )


# ---- resolving docs into the typed model --------------------------------------------------


class _Resolver:
    def __init__(
        self,
        findings: list[Finding],
        servers: dict[str, Inventory],
        refused_servers: frozenset[str] = frozenset(),
    ) -> None:
        self.findings = findings
        self.servers = servers
        """The site's server types (values/inventories/), by name."""
        self.refused_servers = refused_servers
        """The site's inventory files refused (their own findings say why), by name."""

    def inventory(
        self, doc: Doc, i: int, raw: dict[str, Any], vendor_ids: tuple[str, ...]
    ) -> Inventory | None:
        """A pool's inventory: its serverType, the site's first; else the one of its model whose
        accelerator is the vendor's (`vendor_ids`: its file's id and its catalog entry's), the
        site's first. A serverType that names none is a finding; None without one."""
        name = raw.get("serverType")
        if name is not None:
            if name in self.servers:
                return self.servers[name]
            if name in inventory.builtin():
                return inventory.builtin()[name]
            if name in self.refused_servers:
                return None  # its file is there, and its own finding says what is wrong with it
            known = sorted({*self.servers, *inventory.builtin()})
            self.findings.append(
                Finding(
                    "REF002",
                    f"pool {raw['name']!r}: no inventory for server type {name!r}",
                    doc.locate(("pools", i, "serverType")),
                    f"$.pools[{i}].serverType",
                    did_you_mean(
                        str(name),
                        known,
                        f"declare it in values/inventories/{name}.yaml (docs/node-config.md), "
                        "or name one of: " + ", ".join(known),
                    ),
                )
            )
            return None
        model = str(raw["model"]).lower()
        for inv in (*self.servers.values(), *inventory.builtin().values()):
            acc = inv.accelerator
            if acc is not None and acc.vendor in vendor_ids and acc.model.lower() == model:
                return inv
        return None

    def vendor(self, vendor_id: str, doc: Doc, in_catalog: bool = True) -> Vendor | None:
        before = len(self.findings)
        ctx = Context(vendor_id, doc, self.findings)
        where = ctx.where
        resource = ctx.need(("resourceName",), "resourceName", f"set resourceName in {where}")
        selector_label = ctx.need(
            ("selectorLabel",), "selectorLabel", f"set selectorLabel in {where}"
        )
        model_label = ctx.need(("modelLabel",), "modelLabel", f"set modelLabel in {where}")
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
            ctx.need(
                ("devicePlugin", key),
                f"devicePlugin.{key}",
                f"set devicePlugin.{key} in {where} (the catalog has no default for it)",
            )
        self.plugin_needs(vendor_id, doc, in_catalog)
        config = plugin_config(dp.get("configFile"))
        sharing = self.sharing(ctx, resource, config)
        dra = DRA.resolve(ctx)
        pools_raw = doc.get("pools", default=[]) or []
        if not pools_raw:
            ctx.need(("pools",), "pools", f"list the vendor's node pools in {where}")
        vendor_taints = tuple(_taint(t) for t in doc.get("taints", default=[]) or [])
        pci_models = {
            str(name): PciModel(tuple(m["classes"]), tuple(m["devices"]), m["source"])
            for name, m in (doc.get("pciModels", default={}) or {}).items()
        }
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
                **(sharing.mode.pool_labels(sharing) if sharing else {}),
                **raw.get("labels", {}),
            }
            taints = tuple(_taint(t) for t in raw["taints"]) if "taints" in raw else vendor_taints
            pci_devices, pci_classes = _pool_pci(raw, pci_models)
            catalog_id = str(doc.get("catalog", default=vendor_id)) if in_catalog else vendor_id
            server = self.inventory(doc, i, raw, (vendor_id, catalog_id))
            own_shape = inventory.shape(raw.get("node"))
            pools.append(
                Pool(
                    index=i,
                    name=raw["name"],
                    model=raw["model"],
                    devices_per_node=raw["devicesPerNode"],
                    nodes=nodes,
                    node_count=len(nodes) if nodes else int(raw.get("nodeCount", 0)),
                    pci_devices=pci_devices,
                    pci_classes=pci_classes,
                    labels=labels,
                    taints=taints,
                    replicas=sharing.replicas if sharing else 1,
                    inventory=server,
                    node=own_shape.over(server.node) if server else own_shape,
                )
            )
        if sharing:
            sharing.mode.check_pools(ctx, sharing, pools)
        if len(self.findings) > before:
            return None
        return Vendor(
            id=vendor_id,
            display_name=doc.get("displayName", default=vendor_id),
            resource_name=(
                DRA.quota_resource(vendor_id)
                if dra
                else sharing.mode.advertised(sharing, config)
                if sharing
                else resource
            ),
            pci_vendor=doc.get("pciVendor", default=""),
            pci_models=pci_models,
            selector_label=selector_label,
            model_label=model_label,
            node_labels=dict(node_labels),
            taints=vendor_taints,
            # costWeight prices a whole device; a share or MIG instance costs its part of one.
            cost_weight=float(doc.get("costWeight", default=1.0))
            / (sharing.replicas if sharing else 1),
            model_cost_weights={
                str(m): float(w) / (sharing.replicas if sharing else 1)
                for m, w in sorted((doc.get("costWeights", default={}) or {}).items())
            },
            device_plugin=DevicePlugin(dp["name"], dp["namespace"], node_agent(dp), config),
            exporter=dict(doc.get("exporter", default={}) or {}),
            pools=tuple(pools),
            doc=doc,
            runtime_handler=str((doc.get("runtime", default={}) or {}).get("handler", "")),
            runtime_class=str(doc.get("runtimeClass", default="") or ""),
            sharing=sharing,
            dra=dra,
            catalog=str(doc.get("catalog", default=vendor_id)) if in_catalog else "",
            plugin_provider=str(dp.get("provided", FLEET)),
            exporter_provider=self.exporter_provider(ctx),
            operator=vendor_operator(doc.get("operator", default=None)),
        )

    def exporter_provider(self, ctx: Context) -> str:
        """`exporter.provided`; `render: false`, the older spelling, is `site`. Both, saying
        different things, is a finding (the vendor is still read, as `provided` says)."""
        raw = ctx.doc.get("exporter", default={}) or {}
        rendered = raw.get("render", True)
        provided = str(raw.get("provided", FLEET if rendered else SITE))
        if rendered is False and provided == FLEET:
            ctx.refuse(
                "VAL003",
                f"vendor {ctx.vendor_id}: exporter.render: false and exporter.provided: fleet "
                "say opposite things",
                ("exporter", "render"),
                f"drop exporter.render from {ctx.where}: exporter.provided says who provides the "
                "exporter (fleet, operator or site)",
            )
        return provided

    def sharing(self, ctx: Context, resource: str, config: PluginConfig | None) -> Sharing | None:
        """The vendor's `sharing`, resolved by the mode it names; None for whole devices, or
        when the mode cannot share them as asked (its findings say why)."""
        raw = ctx.doc.get("sharing", default=None)
        if not raw:
            return None
        ((key, settings),) = raw.items()
        return sharing_mode(key).resolve(ctx, settings, resource, config)

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

    def team(self, name: str, doc: Doc, clusters_named: frozenset[str] = frozenset()) -> Team:
        """`clusters_named`: the clusters of the environments a layer is common to (the base
        layer's). Where there are any, a quota map is read per cluster or per model only in each
        environment's own views (clusters.split), which say what is wrong with it there: read
        here too, its every error would be said twice, once in words that do not fit."""
        raw = doc.get("quota", default={}) or {}
        return Team(
            name=name,
            namespaces=tuple(doc.get("namespaces", default=[name])),
            owners=tuple(doc.get("owners", default=[])),
            pod_security=doc.get("podSecurity", default="baseline"),
            security_profiles=tuple(doc.get("securityProfiles", default=[]) or []),
            quota={k: clusters.quota_total(v) for k, v in sorted(raw.items())},
            doc=doc,
            # A map is per model until the environment's clusters are known: where they are
            # declared, clusters.split reads each map again (a cluster's or a model's).
            models={
                k: {str(m): int(n) for m, n in sorted(v.items())}
                for k, v in sorted(raw.items())
                if isinstance(v, dict) and not clusters_named
            },
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
            argocd_instance=str(argo.get("instance", "")),
            argocd_version=str(argo.get("version", "")),
            node_config_method=d.get("nodeConfig", {}).get("method", "nfd"),
            allow_overcommit=bool(d.get("capacity", {}).get("allowOvercommit", False)),
            overcommit_ratio=_ratio(d.get("capacity", {}).get("overcommitRatio")),
            mirrors=Mirrors(
                registries=_pairs(d.get("mirrors", {}).get("registries")),
                charts=_pairs(d.get("mirrors", {}).get("charts")),
            ),
            doc=doc,
        )


def _pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in (raw or {}).items()))


def _ratio(raw: Any) -> float | None:
    return None if raw is None else float(raw)


def _pool_pci(
    raw: dict[str, Any], models: dict[str, PciModel]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(device IDs, classes) a pool's NFD rule matches: the pool's pciDevices, else its model's.

    pciDevices of a model the catalog does not know match the vendor's accelerator classes (all
    NFD's accelerator classes when the vendor has no pciModels). No IDs at all: ((), ()).
    """
    model = find_pci_model(models, str(raw["model"]))
    if "pciDevices" in raw:
        if model is not None:
            classes = model.classes
        else:
            known = {c for m in models.values() for c in m.classes}
            classes = tuple(sorted(known)) if known else ACCELERATOR_CLASSES
        return tuple(raw["pciDevices"]), classes
    if model is not None:
        return model.devices, model.classes
    return (), ()


def _servers(
    parsed: list[Parsed], findings: list[Finding], broken: set[tuple[str, str]]
) -> dict[str, Inventory]:
    """The site's server types (values/inventories/<server type>.yaml), by file name; `broken`
    gets those refused here."""
    out: dict[str, Inventory] = {}
    for p in parsed:
        said = p.data.get("serverType", p.name)
        if said != p.name:
            findings.append(
                Finding(
                    "VAL003",
                    f"serverType {said!r} is not the file's name {p.name!r}",
                    p.smap.locate(("serverType",)),
                    "$.serverType",
                    f"the file's name is the server type: rename the file to {said}.yaml, or "
                    "remove serverType",
                )
            )
            broken.add(("inventory", p.name))
            continue
        out[p.name] = inventory.from_data(p.data, p.name, p.file)
    return out


def _taint(raw: dict[str, str]) -> Taint:
    return Taint(key=raw["key"], effect=raw["effect"], value=raw.get("value", ""))


def _catalog_doc(entry: str, at: Location) -> Doc | None:
    """The catalog entry as the layer under a vendor file. Every value it supplies is located
    `at` the vendor file's `catalog:` key (or its top): that is where the user includes it and can
    override it, and no finding may point into the installed package."""
    cat = catalog()
    if entry not in cat:
        return None
    data, smap = cat[entry]
    doc = Doc.from_source(data, smap, record_source=False)
    return Doc(doc.data, dict.fromkeys(doc.values, at), dict.fromkeys(doc.keys, at), (), at)


def load(values_dir: Path, cache_dir: Path | None = None, *, write_cache: bool = True) -> Values:
    """Load and resolve the whole tree, or raise FindingsError with every problem found.

    `cache_dir`: a folder that keeps the clean files parsed, by content (filecache.py); read,
    and written only with `write_cache` (`render --check` writes nothing)."""
    loaded = load_all(values_dir, cache_dir, write_cache=write_cache)
    if has_errors(loaded.findings):
        raise FindingsError(loaded.findings)
    return loaded.values


@dataclass(frozen=True)
class Loaded:
    """The views of a values tree and what loading it found. With errors among the findings,
    the views hold only what loading accepted: a file it refused is left out whole, a vendor it
    refused is named in each view's `refused`, an environment whose file it refused has no
    view, and a pool or workload the cluster split could not place is in no cluster. Checks may
    run on them (every root cause in one run); nothing may be rendered from them."""

    values: Values
    findings: list[Finding]
    # A digest of everything the views are made of: each values file read (its kind, display
    # path and bytes) and the code's digest (the catalog and inventories are package data).
    # Two loads with the same fingerprint make the same views (policy/memo.py keeps their
    # digests by it).
    fingerprint: str = ""
    # By team name: a digest of what a team's objects (in each view) are made of: every values
    # file but the teams', its own file and the code's digest. A team's object in a view is made
    # of its own file and of no other team's: its digest is kept by this (policy/memo.py).
    team_sources: dict[str, str] = field(default_factory=dict)
    # A digest of every values file but the teams' (and of the code): what a view without its
    # teams is made of, with its `retired` namespaces (which the teams' files disable).
    rest_source: str = ""


def load_all(
    values_dir: Path, cache_dir: Path | None = None, *, write_cache: bool = True
) -> Loaded:
    """The whole tree loaded as far as it can be (`load`); FindingsError only when nothing can
    be viewed (no usable fleet.yaml)."""
    if values_dir.is_symlink():
        try:
            values_dir.resolve(strict=True)
        except (OSError, RuntimeError):
            raise FindingsError(
                [
                    Finding(
                        "VAL002",
                        "the values tree is a symbolic link that loops or points to nothing",
                        Location(values_dir.name),
                        hint="point --values at the folder itself",
                    )
                ]
            ) from None
    if not values_dir.is_dir():
        raise UsageError(
            f"values directory {str(values_dir)!r} does not exist: run from the repository "
            "root or pass --values DIR"
        )
    findings: list[Finding] = []
    broken: set[tuple[str, str]] = set()
    cache = FileCache(cache_dir)
    read: list[str] = []
    of_teams: dict[str, list[str]] = {}
    parsed = _parse_all(values_dir, findings, broken, cache, read, of_teams)
    if write_cache:
        cache.save()
    by_kind: dict[str, list[Parsed]] = {k: [] for k in ("fleet", *KIND_DIRS.values())}
    for p in parsed:
        by_kind[p.kind].append(p)
    if not by_kind["fleet"]:
        raise FindingsError(
            findings or [Finding("VAL002", "no usable fleet.yaml", Location(values_dir.name))]
        )
    fleet_p = by_kind["fleet"][0]
    fleet_doc = Doc.from_source(fleet_p.data, fleet_p.smap)
    environments = list(fleet_doc.data["environments"])

    for i, env in enumerate(fleet_doc.data.get("productionEnvironments", [])):
        if env not in environments:
            findings.append(
                Finding(
                    "REF002",
                    f"production environment {env!r} is not one of environments",
                    fleet_doc.locate(("productionEnvironments", i)),
                    f"$.productionEnvironments[{i}]",
                    did_you_mean(
                        env, environments, "known environments: " + ", ".join(environments)
                    ),
                )
            )

    vendor_docs: dict[str, Doc] = {}
    in_catalog: set[str] = set()
    for p in by_kind["vendor"]:
        own = Doc.from_source(p.data, p.smap)
        entry = p.data.get("catalog", p.name)
        base = _catalog_doc(entry, p.smap.keys.get(("catalog",), Location(p.file, 1, 1)))
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
                broken.add(("vendor", p.name))
                continue
            meant = difflib.get_close_matches(p.name, sorted(catalog()), n=1, cutoff=0.75)
            if meant and "resourceName" not in p.data:
                # A misspelt file name, not a vendor of its own: say so once, instead of every
                # field only the catalog entry would have given.
                findings.append(
                    Finding(
                        "VAL003",
                        f"vendor file {p.name!r} names no built-in catalog entry: did you mean "
                        f"{meant[0]!r}?",
                        Location(p.file),
                        hint=f"rename it to values/vendors/{meant[0]}.yaml, or add `catalog: "
                        f"{meant[0]}` to it to use that entry under the name {p.name!r}",
                    )
                )
                # What names the vendor it meant is left to that finding too (a quota for
                # nvidia beside vendors/nvida.yaml).
                broken.update((("vendor", p.name), ("vendor", meant[0])))
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
                    hint=did_you_mean(
                        name,
                        environments,
                        "rename the file to an environment of fleet.yaml, or add it to "
                        "environments in values/fleet.yaml, or remove the file",
                    ),
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
                            did_you_mean(
                                key,
                                known,
                                f"known {section}: " + (", ".join(sorted(known)) or "none"),
                            ),
                        )
                    )

    servers = _servers(by_kind["inventory"], findings, broken)
    refused_servers = frozenset(name for kind, name in broken if kind == "inventory")
    resolver = _Resolver(findings, servers, refused_servers)
    cpu_servers = tuple(inv for _, inv in sorted(servers.items()) if inv.accelerator is None)
    all_clusters = frozenset(
        str(c) for p in env_files.values() for c in (p.data.get("clusters") or {})
    )

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
        refused = {name for kind, name in broken if kind == "vendor"}
        for vid in sorted(vdocs):
            if vdocs[vid].get("enabled", default=True):
                v = resolver.vendor(vid, vdocs[vid], vid in in_catalog)
                if v is not None:
                    vendors.append(v)
                else:
                    refused.add(vid)
        # The base layer is every environment's: where environments declare clusters, a map
        # there is one environment's split by cluster or by model (Resolver.team).
        named = frozenset() if env != BASE_ENV else all_clusters
        teams = [
            resolver.team(t, tdocs[t], named)
            for t in sorted(tdocs)
            if tdocs[t].get("enabled", default=True)
        ]
        retired = {
            str(ns)
            for t in tdocs
            if not tdocs[t].get("enabled", default=True)
            for ns in tdocs[t].get("namespaces", default=[t]) or []
        }
        return FleetView(
            env,
            resolver.fleet(fdoc),
            tuple(vendors),
            tuple(teams),
            env_p.file if env_p else None,
            retired=tuple(sorted(retired)),
            refused=tuple(sorted(refused)),
            cpu_servers=cpu_servers,
        )

    # Each layer resolves on its own; a problem found in several layers is reported once,
    # naming the environments it holds in.
    layers: list[tuple[str, list[Finding]]] = []

    def resolved(env: str) -> FleetView:
        before = len(findings)
        out = view(env)
        layers.append((env, findings[before:]))
        del findings[before:]
        return out

    base_view = resolved(BASE_ENV)
    envs: dict[str, FleetView] = {}
    hubs: dict[str, FleetView] = {}
    layer_of: dict[str, list[Finding]] = {}
    unmet: list[clusters.Unmet] = []  # the models no pool is, in the environments with clusters
    for env in environments:
        if ("environment", env) in broken:
            # Without its file the environment would be viewed as the base layer, and checked
            # for what its file changes: its file's own findings are all there is to say.
            continue
        hub = hubs[env] = resolved(env)
        env_p = env_files.get(env)
        # Placement findings belong to the environment's layer (its file says where things go).
        found = layer_of[env] = layers[-1][1]
        if env_p is not None and env_p.data.get("clusters"):
            cdoc = Doc.from_source(env_p.data, env_p.smap, ("clusters",))
            envs.update((v.key, v) for v in clusters.split(hub, cdoc, found, unmet))
        else:
            found.extend(clusters.unsplit_findings(hub))
            envs[env] = hub
    if unmet:
        # The same models missed where there are no clusters join their CLU008 (one per line).
        unmet += (m for e in layer_of if e in envs for m in clusters.unmet_models(envs[e]))
        order = {env: i for i, env in enumerate(environments)}
        unmet.sort(key=lambda m: order[m.env])  # each finding names them in the fleet's order
        for env, said in clusters.model_findings(unmet).items():
            layer_of[env].extend(said)
    findings.extend(merge_layers(layers, environments))
    read.append(_catalog_digest())
    fingerprint = hashlib.sha256("\n".join(read).encode()).hexdigest()
    # Every file but the teams' (a team's object is made of those and of its own file alone).
    teamless = set(read).difference(*of_teams.values())
    rest = hashlib.sha256("\n".join(k for k in read if k in teamless).encode()).hexdigest()
    sources = {
        name: hashlib.sha256("\n".join([rest, *keys]).encode()).hexdigest()
        for name, keys in of_teams.items()
    }
    values = Values(str(values_dir), base_view, envs, hubs)
    return Loaded(values, findings, fingerprint, sources, rest)


# What loading the values tree can report, besides yamlio.CODES and the policy checks.
CODES = (
    CodeInfo(
        "VAL001",
        "values (schema)",
        "error",
        "a values file does not match its JSON Schema (unknown key, wrong type, bad value)",
    ),
    CodeInfo(
        "VAL002",
        "values (load)",
        "error",
        "an unexpected file in the values tree, or a symbolic link that loops or leads out of it",
    ),
    CodeInfo(
        "VAL003",
        "values (load)",
        "error",
        "a resolved vendor lacks a fact it needs (or selectorLabel is not in nodeLabels); an "
        "inventory's serverType is not its file's",
    ),
    CodeInfo(
        "ALC001",
        "values (load)",
        "error",
        "a vendor shares its devices in a way its device plugin's config file does not offer",
    ),
    CodeInfo(
        "ALC003",
        "values (load)",
        "error",
        "a vendor allocated by DRA lacks its driver or a pool model's attribute, or shares",
    ),
    CodeInfo(
        "ALC006",
        "values (load)",
        "error",
        "a MIG profile or vNPU template the catalog does not record, or a pool it does not fit",
    ),
    CodeInfo("NAME001", "values (load)", "error", "a values file name is not a DNS-1123 label"),
    CodeInfo("NAME002", "values (load)", "error", "a pool name is used twice in one vendor file"),
    CodeInfo(
        "REF002",
        "values (load)",
        "error",
        "an override of an unknown vendor, team or environment; an unknown production "
        "environment, or pool serverType (no inventory)",
    ),
)
