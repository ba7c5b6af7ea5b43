"""Device plugins: a DaemonSet per vendor, on its pools only, in a privileged namespace; for a
vendor allocated by DRA, its DeviceClass instead.

The DaemonSet is the vendor's upstream manifest as the catalog records it
(generator/values/catalog/, each fact with its source; docs/vendors.md), placed by the fleet's
own selectors and taints."""

from __future__ import annotations

import hashlib
from typing import Any

from generator.builders import claims
from generator.builders.agents import container, daemonset, rbac_objects
from generator.builders.common import metadata, namespace
from generator.findings import Location
from generator.values.allocation.base import MpsDaemon, PluginContainer
from generator.values.model import FleetView, NodeAgent, Vendor
from generator.values.yamlio import dump
from generator.vocab.addons import FLEET
from generator.vocab.api import CORE
from generator.vocab.kube import SYSTEM_NAMESPACES
from generator.vocab.labels import (
    COMPONENT_LABEL,
    CONFIG_DIGEST_ANNOTATION,
    NAME_LABEL,
    SYNC_WAVE,
    VENDOR_LABEL,
)
from generator.vocab.objects import Obj
from generator.vocab.units import DEVICE_PLUGINS_UNIT, Component

# Where a shared vendor's plugin finds its config file (a ConfigMap key, mounted read-only).
CONFIG_DIR = "/etc/device-plugin"
CONFIG_KEY = "config.yaml"


def build(view: FleetView) -> list[Component]:
    if not view.vendors:
        return []
    out: list[Component] = []
    namespaces: dict[str, list[str]] = {}
    # Findings on a Namespace point at the first vendor (by id) that asks for it.
    asked_at: dict[str, Location] = {}
    for vendor in view.vendors:
        if vendor.dra:
            # No device plugin: the site's DRA driver publishes the devices, the fleet's
            # DeviceClass selects them (builders/claims.py).
            out.append(
                Component(
                    DEVICE_PLUGINS_UNIT,
                    f"{DEVICE_PLUGINS_UNIT}/{vendor.id}",
                    [claims.device_class(vendor)],
                    origin=vendor.doc.anchor(("allocation",)),
                )
            )
            continue
        if vendor.plugin_provider != FLEET:
            continue  # the vendor's operator or the site runs it (builders/operators.py)
        ns = vendor.device_plugin.namespace
        if ns not in SYSTEM_NAMESPACES:
            known = namespaces.setdefault(ns, [])
            known += [src for src in vendor.doc.sources if src not in known]
            asked_at.setdefault(ns, vendor.doc.anchor(("devicePlugin", "namespace")))
        out.append(
            Component(
                DEVICE_PLUGINS_UNIT,
                f"{DEVICE_PLUGINS_UNIT}/{vendor.id}",
                _vendor_objects(view, vendor),
                origin=vendor.doc.anchor(("devicePlugin",)),
            )
        )
    if namespaces:
        comp = Component(DEVICE_PLUGINS_UNIT, f"{DEVICE_PLUGINS_UNIT}/namespaces")
        for name in sorted(namespaces):
            ns_obj = namespace(
                name,
                sources=namespaces[name],
                pod_security="privileged",
                annotations={SYNC_WAVE: "-1"},
            )
            comp.add(ns_obj, asked_at[name])
        out.insert(0, comp)
    return out


def _vendor_objects(view: FleetView, vendor: Vendor) -> list[Obj]:
    dp = vendor.device_plugin
    labels = {
        NAME_LABEL: dp.name,
        COMPONENT_LABEL: "device-plugin",
        VENDOR_LABEL: vendor.id,
    }
    objs = rbac_objects(dp.name, dp.namespace, dp.agent, vendor.doc.sources, labels)
    ds = daemonset(
        view,
        vendor,
        dp.agent,
        name=dp.name,
        namespace=dp.namespace,
        labels=labels,
        match={NAME_LABEL: dp.name},
    )
    config = plugin_config(vendor)
    if config is not None:
        text = dump(config)
        objs.append(
            {
                "apiVersion": CORE,
                "kind": "ConfigMap",
                "metadata": metadata(
                    config_map_name(vendor),
                    namespace=dp.namespace,
                    sources=vendor.doc.sources,
                    labels=labels,
                ),
                "data": {CONFIG_KEY: text},
            }
        )
        digest = hashlib.sha256(text.encode()).hexdigest()
        _mount_config(vendor, ds, digest)
        mps = dp.mps
        if mps_daemon_name(vendor) is not None and mps:
            _reach_mps(ds, mps)
            objs.append(mps_daemon(view, vendor, mps, digest))
    if vendor.sharing:
        _mode_container(ds, vendor.sharing.mode.plugin_container(vendor.sharing))
    objs.append(ds)
    return objs


def _mode_container(ds: Obj, settings: PluginContainer) -> None:
    """What the vendor's sharing mode gives the plugin's container (values/allocation/: MIG's
    NVIDIA_MIG_MONITOR_DEVICES and SYS_ADMIN, catalog mig.plugin, cited there): its env after
    the catalog's and the config file's, as upstream's chart orders them, and its securityContext
    in place of the catalog's. A container with added capabilities needs Pod Security
    `privileged`, which the plugins' namespaces enforce (build)."""
    ctr = ds["spec"]["template"]["spec"]["containers"][0]
    if settings.env:
        ctr.setdefault("env", []).extend(dict(e) for e in settings.env)
    if settings.security_context:
        ctr["securityContext"] = dict(settings.security_context)


def _mps_volumes(mps: MpsDaemon) -> list[Obj]:
    return [
        {"name": "mps-root", "hostPath": {"path": mps.root, "type": "DirectoryOrCreate"}},
        {"name": "mps-shm", "hostPath": {"path": f"{mps.root}/shm"}},
    ]


def _mps_mounts(mps: MpsDaemon) -> list[Obj]:
    # The daemon's memory at /dev/shm: the plugin checks the daemon's health through it.
    return [
        {"name": "mps-shm", "mountPath": "/dev/shm"},
        {"name": "mps-root", "mountPath": mps.container_root},
    ]


def _reach_mps(ds: Obj, mps: MpsDaemon) -> None:
    """The plugin of an MPS vendor: the host folder it shares with the MPS control daemon, as
    upstream's chart mounts it (catalog configFile.mps, cited there); the plugin refuses to start
    under MPS without its variable."""
    pod = ds["spec"]["template"]["spec"]
    ctr = pod["containers"][0]
    # _mount_config gave the plugin its env; every plugin mounts the kubelet's folder
    # (loader.plugin_needs), so its volumes and mounts are there.
    ctr["env"].append({"name": mps.env, "value": mps.root})
    ctr["volumeMounts"].extend(_mps_mounts(mps))
    pod["volumes"].extend(_mps_volumes(mps))


def mps_daemon_name(vendor: Vendor) -> str | None:
    """The name of the vendor's MPS control daemon DaemonSet (in its plugin's namespace), for a
    vendor whose sharing mode runs one and whose plugin's catalog entry records it; else None."""
    sharing, dp = vendor.sharing, vendor.device_plugin
    if sharing is None or not sharing.mode.mps_daemon or dp.mps is None or dp.config is None:
        return None
    return f"{dp.name}-mps-control-daemon"


def mps_daemon(view: FleetView, vendor: Vendor, mps: MpsDaemon, digest: str) -> Obj:
    """The MPS control daemon of an MPS vendor, on the vendor's nodes as its plugin is. From
    the plugin's image, privileged as upstream's chart runs it: its init container mounts the
    daemon's memory on the host (hence Bidirectional), the daemon sets each GPU's compute mode
    and limits each client to 1/replicas of its memory and compute. It reads the plugin's config
    file. Upstream's chart selects nodes by nvidia.com/mps.capable, a label only NVIDIA's GPU
    Feature Discovery sets; the fleet selects the vendor's nodes by its own labels instead."""
    dp = vendor.device_plugin
    name = mps_daemon_name(vendor)
    assert name is not None  # the caller asked mps_daemon_name
    labels = {
        NAME_LABEL: name,
        COMPONENT_LABEL: "mps-control-daemon",
        VENDOR_LABEL: vendor.id,
    }
    agent = NodeAgent(
        dp.image,
        dp.version,
        command=mps.command,
        env=mps.env_vars,
        volumes=tuple(_mps_volumes(mps)),
        volume_mounts=tuple(_mps_mounts(mps)),
        security_context={"privileged": True},
    )
    ds = daemonset(
        view,
        vendor,
        agent,
        name=name,
        namespace=dp.namespace,
        labels=labels,
        match={NAME_LABEL: name},
    )
    pod = ds["spec"]["template"]["spec"]
    mount = {
        "name": "mps-root",
        "mountPath": mps.container_root,
        "mountPropagation": "Bidirectional",
    }
    init = NodeAgent(
        dp.image,
        dp.version,
        command=mps.mount_command,
        volume_mounts=(mount,),
        security_context={"privileged": True},
    )
    pod["initContainers"] = [container("mounts", init, registry_mirrors=view.fleet.mirrors)]
    _mount_config(vendor, ds, digest)
    return ds


def config_map_name(vendor: Vendor) -> str:
    return f"{vendor.device_plugin.name}-config"


def plugin_config(vendor: Vendor) -> dict[str, Any] | None:
    """The plugin's config file of a vendor that shares its devices, as its sharing mode writes
    it (values/allocation/: time-slicing's and MPS's shares, MIG's strategy); None for whole
    devices, or for vNPUs the site made, which the plugin finds itself."""
    sharing, config = vendor.sharing, vendor.device_plugin.config
    if sharing is None or config is None:
        return None
    return sharing.mode.plugin_file_settings(sharing, config)


def _mount_config(vendor: Vendor, ds: Obj, digest: str) -> None:
    config = vendor.device_plugin.config
    assert config is not None  # plugin_config gave a file
    template = ds["spec"]["template"]
    template["metadata"]["annotations"] = {CONFIG_DIGEST_ANNOTATION: digest}
    pod = template["spec"]
    # A plugin mounts the kubelet's folder (loader.plugin_needs), the MPS daemon its root: both
    # have volumes and mounts. Env is optional (a daemon whose daemonEnv is empty).
    pod["volumes"].append(
        {"name": "device-plugin-config", "configMap": {"name": config_map_name(vendor)}}
    )
    ctr = pod["containers"][0]
    ctr.setdefault("env", []).append({"name": config.env, "value": f"{CONFIG_DIR}/{CONFIG_KEY}"})
    ctr["volumeMounts"].append(
        {"name": "device-plugin-config", "mountPath": CONFIG_DIR, "readOnly": True}
    )
