"""The allocation modes' answers at the edges the example fleet does not reach
(generator/values/allocation/, docs/allocation.md): a plugin file that offers other modes, a
catalog without the vNPU templates asked for, a second MIG pool, a daemon without environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.values import loader as values
from generator.values.allocation.timeslicing import TIME_SLICING
from tests.fixtures import (
    MIG_NVIDIA,
    MPS_NVIDIA,
    NVIDIA,
    SHARED_NVIDIA,
    VNPU_ASCEND,
    findings,
    lines,
    tree,
)

# NVIDIA's plugin with a config file (written whole: the schema wants every fact) offering
# {offers}, for a vendor that asks for another mode.
OWN_CONFIG = (
    "devicePlugin:\n  configFile:\n    {{env: C, version: v1, sharedSuffix: .s, sharing: "
    "[{offers}], sources: ['a/b c d']}}\n"
)


def test_a_config_file_names_every_mode_it_offers(tmp_path: Path) -> None:
    nvidia = OWN_CONFIG.format(offers="mps, mig") + "sharing:\n  timeSlicing: {replicas: 2}\n"
    assert lines(tree(tmp_path, {"vendors/nvidia.yaml": nvidia + NVIDIA})) == [
        "values/vendors/nvidia.yaml:5:3: ALC001 vendor nvidia shares its devices by timeSlicing, "
        "but its device plugin cannot: its config file offers mps, mig (at "
        "$.sharing.timeSlicing); remove `sharing`, or use a vendor whose plugin shares devices "
        "this way (docs/allocation.md lists them)"
    ]


def test_mps_from_a_config_file_that_does_not_offer_it_is_refused_at_its_key(
    tmp_path: Path,
) -> None:
    nvidia = OWN_CONFIG.format(offers="timeSlicing") + "sharing:\n  mps: {replicas: 2}\n"
    assert lines(tree(tmp_path, {"vendors/nvidia.yaml": nvidia + NVIDIA})) == [
        "values/vendors/nvidia.yaml:5:3: ALC001 vendor nvidia shares its devices by mps, but its "
        "device plugin cannot: its config file offers timeSlicing (at $.sharing.mps); remove "
        "`sharing`, or use a vendor whose plugin shares devices this way (docs/allocation.md "
        "lists them)"
    ]


def test_a_vnpu_template_of_a_catalog_without_templates_is_refused_with_none_known(
    tmp_path: Path,
) -> None:
    """NVIDIA's catalog entry records no vNPU templates: the finding says none are known."""
    nvidia = "sharing:\n  vnpu: {template: vir06_1c_16g, perDevice: 4}\n" + NVIDIA
    assert lines(tree(tmp_path, {"vendors/nvidia.yaml": nvidia})) == [
        "values/vendors/nvidia.yaml:2:20: ALC006 vendor nvidia: vNPU template 'vir06_1c_16g' is "
        "not one the catalog records for its devices (vnpu.templates: none) (at "
        "$.sharing.vnpu.template); use one of none, or add the template to `vnpu.templates` in "
        "the vendor file with its resource suffix, models and source"
    ]


def test_a_mig_pool_after_one_that_fits_is_checked_too(tmp_path: Path) -> None:
    """The first pool holds 80GB A100s, which 3g.40gb is made for; the second a 40GB one (20b0),
    which the MIG manager would leave whole."""
    mig = MIG_NVIDIA + (
        '  - {name: a100-40, model: A100, pciDevices: ["20b0"], devicesPerNode: 1, nodes: [n6]}\n'
    )
    assert lines(tree(tmp_path, {"vendors/nvidia-mig.yaml": mig})) == [
        "values/vendors/nvidia-mig.yaml:9:46: ALC006 pool 'a100-40': MIG profile 3g.40gb applies "
        "to devices 20b2, 20b5, 20f3, 20f5, 2322, 2324, 2330, 2331, but the pool matches 20b0 as "
        "well (at $.pools[1].pciDevices); set the pool's pciDevices to the devices of 3g.40gb it "
        "holds (of 20b2, 20b5, 20f3, 20f5, 2322, 2324, 2330, 2331), or a profile all its devices "
        "have"
    ]


def test_each_missing_mig_fact_is_found_at_the_mig_block_with_where_to_set_it(
    tmp_path: Path,
) -> None:
    """A vendor outside the catalog whose `mig` block gives only the strategy: every fact the
    mode needs is VAL003 at that block's line, naming the file to set it in."""
    own = (
        MIG_NVIDIA.replace("catalog: nvidia\n", "").replace(
            "devicePlugin: {name: nvidia-device-plugin-mig}",
            "devicePlugin:\n  {name: p, image: i, version: v1, namespace: n, configFile: {env: C, "
            "version: v1, sharedSuffix: .s, sharing: [mig], sources: ['a/b c d']}}",
        )
        + "resourceName: example.com/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
        "taints: [{key: example.com/gpu, value: 'true', effect: NoSchedule}]\n"
        "mig: {strategy: mixed}\n"
    )
    found = findings(tree(tmp_path, {"vendors/example.yaml": own}))
    assert sorted(
        (str(f.location), f.message, f.hint) for f in found if f.message.startswith("mig.")
    ) == [
        (
            "values/vendors/example.yaml:13:6",
            f"mig.{key} is not set",
            f"set mig.{key} in values/vendors/example.yaml",
        )
        for key in (
            "configLabel",
            "layoutPrefix",
            "plugin.env",
            "plugin.securityContext",
            "profiles",
            "resourcePrefix",
            "sources",
            "stateLabel",
            "stateReady",
        )
    ]


def test_an_mps_daemon_given_no_environment_runs_without_one(tmp_path: Path) -> None:
    """configFile.mps.daemonEnv is optional: a vendor outside the catalog that records its
    daemon without it gets a daemon container with no variables of its own."""
    daemon = (
        "mps: {root: /run/example/mps, containerRoot: /mps, env: MPS_ROOT, command: [daemon], "
        "mountCommand: [mount-shm], maxReplicas: 8, sources: ['a/b c d']}"
    )
    own = (
        MPS_NVIDIA.replace("catalog: nvidia\n", "")
        .replace(
            "devicePlugin: {name: nvidia-device-plugin-mps}",
            "devicePlugin:\n  {name: p, image: i, version: v1, namespace: n, configFile: {env: C, "
            f"version: v1, sharedSuffix: .s, sharing: [mps], sources: ['a/b c d'], {daemon}}},\n"
            "   volumes: [{name: d, hostPath: {path: /var/lib/kubelet/device-plugins}}],\n"
            "   volumeMounts: [{name: d, mountPath: /var/lib/kubelet/device-plugins}]}",
        )
        .replace("nvidia-mps", "example")
        + "resourceName: example.com/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
        "taints: [{key: example.com/gpu, value: 'true', effect: NoSchedule}]\n"
    )
    view = values.load(tree(tmp_path, {"vendors/example.yaml": own})).envs["prod"]
    vendor = view.vendor("example")
    assert vendor is not None and vendor.device_plugin.mps is not None
    mps = vendor.device_plugin.mps
    assert (mps.root, mps.command, mps.env_vars, mps.max_replicas) == (
        "/run/example/mps",
        ("daemon",),
        (),
        8,
    )


def test_a_mode_the_site_does_not_make_has_no_preflight_words(tmp_path: Path) -> None:
    """PRE010 asks only the modes whose units the site makes (MIG, vNPUs); asking time-slicing
    is a programming error that names the mode."""
    view = values.load(tree(tmp_path, {"vendors/nvidia-shared.yaml": SHARED_NVIDIA})).envs["prod"]
    vendor = view.vendor("nvidia-shared")
    assert vendor is not None and vendor.sharing is not None
    assert not vendor.sharing.mode.site_made
    with pytest.raises(NotImplementedError, match="^timeSlicing$"):
        TIME_SLICING.site_shortfall(
            vendor.id, vendor.resource_name, vendor.sharing, vendor.pools[0], "n3", None, "0"
        )


def test_each_vnpu_pool_of_a_model_the_template_is_not_for_is_named(tmp_path: Path) -> None:
    """A template the vendor file adds, made for two models: the first pool is of one of them,
    the second of neither, and the finding names both models the template is for."""
    vnpu = (
        VNPU_ASCEND.replace("vir06_1c_16g", "vir99_x")
        + "  - {name: 310p-vnpu, model: 310p, devicesPerNode: 2, nodes: [npu-v2]}\n"
        "vnpu:\n  templates:\n    vir99_x: {suffix: 9c.9g, models: [910b, 910c], source: a/b c d}\n"
    )
    assert lines(tree(tmp_path, {"vendors/ascend-vnpu.yaml": vnpu})) == [
        "values/vendors/ascend-vnpu.yaml:9:30: ALC006 pool '310p-vnpu': vNPU template vir99_x is "
        "for 910b, 910c chips, not 310p (at $.pools[1].model); use a template made for 310p "
        "(vnpu.templates), or put the pool in a vendor file of its own"
    ]
