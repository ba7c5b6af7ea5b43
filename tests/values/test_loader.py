"""Loading, schema validation with positions, and the layering rules."""

from __future__ import annotations

from pathlib import Path

from generator.findings import Severity
from generator.values import loader as values
from generator.values.allocation.base import PluginConfig, PluginContainer, Sharing
from generator.values.allocation.dra import DraDriver
from generator.values.allocation.registry import sharing_mode
from tests.fixtures import (
    ASCEND_910B,
    CAMBRICON_MLU370,
    DRA_NVIDIA,
    FLEET,
    MIG_NVIDIA,
    MPS_NVIDIA,
    NVIDIA,
    SHARED_NVIDIA,
    VNPU_ASCEND,
    findings,
    lines,
    tree,
)


def test_example_fleet_loads_with_only_the_deliberate_warnings(values_dir: Path) -> None:
    found = findings(values_dir)
    # NVIDIA (seed: 8 + 4 on 8 GPUs) and Ascend (seed 16 + 4 for inference-service on 16), and
    # the Ascend pool's unprefixed accelerator-type label, which NFD prefixes.
    assert [(f.code, f.severity) for f in found] == [
        ("CAP001", Severity.WARNING),
        ("CAP001", Severity.WARNING),
        ("NODE003", Severity.WARNING),
    ]


def test_schema_error_names_file_line_column_and_path(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path, {"teams/ml.yaml": "owners: [a@example.com]\nquota:\n  nvidia: lots\n"}
    )
    assert lines(values_dir) == [
        "values/teams/ml.yaml:3:11: VAL001 'lots' is not of type 'integer' (at $.quota.nvidia)"
    ]


def test_unknown_key_points_at_the_key_and_lists_known_ones(tmp_path: Path) -> None:
    values_dir = tree(
        tmp_path, {"teams/ml.yaml": "owners: [a@example.com]\nquotas:\n  nvidia: 8\n"}
    )
    [finding] = findings(values_dir)
    assert finding.format().startswith(
        "values/teams/ml.yaml:2:1: VAL001 unknown key 'quotas' (at $.quotas)"
    )
    assert "quota" in finding.hint


def test_every_unknown_key_of_an_object_is_reported_with_the_key_it_likely_meant(
    tmp_path: Path,
) -> None:
    team = "owners: [a@example.com]\nqota: {nvidia: 8}\nservces: {}\nzzz: 1\n"
    values_dir = tree(tmp_path, {"teams/ml.yaml": team})
    known = (
        "borrowing, enabled, external, jobs, namespaces, owners, podSecurity, quota, "
        "securityProfiles, services"
    )
    assert lines(values_dir) == [
        f"values/teams/ml.yaml:2:1: VAL001 unknown key 'qota' (at $.qota); did you mean 'quota'? "
        f"known keys here: {known}",
        f"values/teams/ml.yaml:3:1: VAL001 unknown key 'servces' (at $.servces); did you mean "
        f"'services'? known keys here: {known}",
        f"values/teams/ml.yaml:4:1: VAL001 unknown key 'zzz' (at $.zzz); known keys here: {known}",
    ]


def test_a_misspelt_vendor_file_is_one_finding_with_the_catalog_entry_it_likely_meant(
    tmp_path: Path,
) -> None:
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": None, "vendors/nvida.yaml": NVIDIA})
    assert lines(values_dir) == [
        "values/vendors/nvida.yaml: VAL003 vendor file 'nvida' names no built-in catalog entry: "
        "did you mean 'nvidia'?; rename it to values/vendors/nvidia.yaml, or add `catalog: "
        "nvidia` to it to use that entry under the name 'nvida'"
    ]
    # a vendor of its own (it says its resource) is not taken for a typo
    own = NVIDIA + "resourceName: example.com/gpu\n"
    values_dir = tree(tmp_path / "own", {"vendors/nvidia.yaml": None, "vendors/nvida.yaml": own})
    assert not any("did you mean" in line for line in lines(values_dir))


def test_all_findings_of_a_run_are_reported_together(tmp_path: Path) -> None:
    files = {
        "teams/ml.yaml": "quota:\n  nvidia: 8\n  nvidia: 9\n",
        "teams/inference.yaml": "podSecurity: privileged\n",
        "vendors/amd.yaml": "pools:\n  - name: x\n    devicesPerNode: 0\n",
    }
    got = lines(tree(tmp_path, files))
    assert any(g.startswith("values/teams/ml.yaml:3:3: YAML001 duplicate key") for g in got)
    assert any(g.startswith("values/teams/inference.yaml:1:14: VAL001") for g in got)
    assert any(
        g.startswith("values/vendors/amd.yaml:2:5: VAL001 'model' is a required") for g in got
    )
    assert any(g.startswith("values/vendors/amd.yaml:3:21: VAL001 0 is less than") for g in got)


def test_a_value_of_the_wrong_type_suggests_quoting(tmp_path: Path) -> None:
    nvidia = "pools:\n  - {name: a, model: 100, devicesPerNode: 4}\n"
    [finding] = findings(tree(tmp_path, {"vendors/nvidia.yaml": nvidia}))
    assert finding.location.line == 2 and "quote" in finding.hint


def test_stray_files_in_the_values_tree_are_findings(tmp_path: Path) -> None:
    files = {"teams/typo.yml": "quota: {}\n", "team/extra.yaml": "quota: {}\n"}
    got = lines(tree(tmp_path, files))
    assert (
        "values/teams/typo.yml: VAL002 unexpected entry in the values tree; values files end in .yaml"
        in got
    )
    assert any(g.startswith("values/team: VAL002 unexpected entry") for g in got)


def test_catalog_defaults_fill_a_short_vendor_file(tmp_path: Path) -> None:
    # The default NVIDIA vendor (two nodes of 4) and Ascend say pools alone.
    loaded = values.load(tree(tmp_path, {"vendors/ascend.yaml": ASCEND_910B}))
    nvidia = loaded.base.vendor("nvidia")
    assert nvidia is not None
    assert nvidia.resource_name == "nvidia.com/gpu"
    assert nvidia.device_plugin.agent.privileged is False
    assert nvidia.capacity == 8
    ascend = loaded.base.vendor("ascend")
    assert ascend is not None
    assert {"name": "hiai-driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True} in (
        ascend.device_plugin.agent.volume_mounts
    )


def test_every_catalog_default_can_be_overridden(tmp_path: Path) -> None:
    nvidia_yaml = """\
resourceName: nvidia.com/mig-1g.10gb
devicePlugin:
  version: v0.18.0
  env:
    - {name: MIG_STRATEGY, value: mixed}
exporter:
  metrics:
    memoryTotal: {name: DCGM_FI_DEV_FB_TOTAL, unit: MiB}
pools:
  - {name: h100, model: H100, devicesPerNode: 8, nodes: [n1]}
"""
    values_dir = tree(tmp_path, {"vendors/nvidia.yaml": nvidia_yaml})
    nvidia = values.load(values_dir).base.vendor("nvidia")
    assert nvidia is not None
    assert nvidia.resource_name == "nvidia.com/mig-1g.10gb"
    assert nvidia.device_plugin.version == "v0.18.0"
    assert nvidia.device_plugin.image == "nvcr.io/nvidia/k8s-device-plugin"  # merged, not replaced
    assert nvidia.device_plugin.agent.env == ({"name": "MIG_STRATEGY", "value": "mixed"},)  # list
    assert nvidia.exporter["metrics"]["memoryTotal"]["name"] == "DCGM_FI_DEV_FB_TOTAL"
    assert nvidia.exporter["metrics"]["utilization"]["name"] == "DCGM_FI_DEV_GPU_UTIL"


def test_environment_overrides_merge_maps_and_replace_lists(tmp_path: Path) -> None:
    prod_yaml = """\
vendors:
  nvidia:
    devicePlugin: {args: [--only-this]}
    pools:
      - {name: a100, model: A100, devicesPerNode: 4, nodes: [n3]}
teams:
  inference:
    quota: {nvidia: 2}
"""
    files = {
        "vendors/ascend.yaml": ASCEND_910B,
        "teams/inference.yaml": "quota: {nvidia: 4, ascend: 4}\n",
        "environments/prod.yaml": prod_yaml,
    }
    loaded = values.load(tree(tmp_path, files))
    prod, base = loaded.envs["prod"], loaded.base
    nv_prod, nv_base = prod.vendor("nvidia"), base.vendor("nvidia")
    assert nv_prod is not None and nv_base is not None
    assert nv_prod.pools[0].nodes == ("n3",)  # list replaced
    assert nv_base.pools[0].nodes == ("n1", "n2")
    assert nv_prod.device_plugin.agent.args == ("--only-this",)
    assert nv_prod.device_plugin.agent.env == ({"name": "FAIL_ON_INIT_ERROR", "value": "false"},)
    inference = next(t for t in prod.teams if t.name == "inference")
    assert inference.quota == {"ascend": 4, "nvidia": 2}  # map merged
    # a finding about an overridden value points at the environment file
    assert inference.doc.locate(("quota", "nvidia")).file == "values/environments/prod.yaml"
    assert inference.doc.locate(("quota", "ascend")).file == "values/teams/inference.yaml"
    assert inference.doc.sources == ("values/teams/inference.yaml", "values/environments/prod.yaml")


def test_an_environment_can_disable_a_vendor_or_team(tmp_path: Path) -> None:
    files = {
        "vendors/cambricon.yaml": CAMBRICON_MLU370,
        "teams/inference.yaml": "quota: {nvidia: 2}\n",
        "environments/staging.yaml": "vendors:\n  cambricon: {enabled: false}\n"
        "teams:\n  inference: {enabled: false}\n",
    }
    staging = values.load(tree(tmp_path, files)).envs["staging"]
    assert staging.vendor("cambricon") is None
    assert [t.name for t in staging.teams] == ["ml"]


def test_overrides_must_name_known_things(tmp_path: Path) -> None:
    files = {
        "teams/inference.yaml": "quota: {nvidia: 2}\n",
        "environments/prod.yaml": "teams:\n  ml-teem: {quota: {nvidia: 1}}\n",
        "environments/qa.yaml": "{}\n",
    }
    got = lines(tree(tmp_path, files))
    assert (
        "values/environments/prod.yaml:2:3: REF002 override for unknown team 'ml-teem' "
        "(at $.teams['ml-teem']); known teams: inference, ml"
    ) in got
    assert any(g.startswith("values/environments/qa.yaml: REF002 environment 'qa'") for g in got)


def test_missing_required_vendor_facts_name_the_file_to_fix(tmp_path: Path) -> None:
    cambricon = "pools:\n  - {name: a, model: MLU370, devicesPerNode: 8, nodes: [m1]}\n"
    values_dir = tree(tmp_path, {"vendors/cambricon.yaml": cambricon})
    # Never a line inside the installed package (generator/values/catalog/): the user's vendor file.
    assert (
        "values/vendors/cambricon.yaml:1:1: VAL003 devicePlugin.image is not set (at "
        "$.devicePlugin.image); set devicePlugin.image in values/vendors/cambricon.yaml (the "
        "catalog has no default for it)"
    ) in lines(values_dir)


def test_a_vendor_without_catalog_entry_must_say_everything(tmp_path: Path) -> None:
    iluvatar = "pools:\n  - {name: a, model: BI-V100, devicesPerNode: 8, nodes: [i1]}\n"
    values_dir = tree(tmp_path, {"vendors/iluvatar.yaml": iluvatar})
    got = {f.message for f in findings(values_dir) if f.code == "VAL003"}
    assert "resourceName is not set" in got
    assert "devicePlugin.image is not set" in got


def test_bad_file_names_are_findings(tmp_path: Path) -> None:
    values_dir = tree(tmp_path, {"teams/ML_Team.yaml": "quota: {}\n"})
    assert any("NAME001 file name 'ML_Team'" in g for g in lines(values_dir))


def test_an_environment_can_override_fleet_settings(tmp_path: Path) -> None:
    files = {
        "environments/staging.yaml": "fleet:\n  nodeConfig: {method: node-patch}\n"
        "  monitoring: {namespace: mon-staging}\n  capacity: {allowOvercommit: false}\n",
    }
    fleet = FLEET + "nodeConfig: {method: nfd}\ncapacity: {allowOvercommit: true}\n"
    loaded = values.load(tree(tmp_path, files, fleet=fleet))
    staging, prod = loaded.envs["staging"].fleet, loaded.envs["prod"].fleet
    assert (staging.node_config_method, prod.node_config_method) == ("node-patch", "nfd")
    assert staging.doc.get("monitoring", "namespace") == "mon-staging"
    assert staging.allow_overcommit is False and prod.allow_overcommit is True


def test_a_pool_name_used_twice_is_found_at_the_second(tmp_path: Path) -> None:
    """NAME002: two pools of one vendor with one name would render one NodeFeatureRule (and one
    Kueue flavor) over the other."""
    nvidia = (
        "pools:\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n1]}\n"
        "  - {name: a100, model: A100, devicesPerNode: 4, nodes: [n2]}\n"
    )
    got = lines(tree(tmp_path, {"vendors/nvidia.yaml": nvidia}))
    assert [g for g in got if " NAME002 " in g] == [
        "values/vendors/nvidia.yaml:3:12: NAME002 pool name 'a100' is used twice "
        "(at $.pools[1].name); give every pool of a vendor its own name"
    ]


def test_a_value_outside_a_fixed_set_is_said_in_words_with_the_one_it_likely_meant(
    tmp_path: Path,
) -> None:
    service = (
        "owners: [a@example.com]\nquota: {{nvidia: 2}}\nservices:\n  chat:\n"
        "    phase: {phase}\n    routing: {routing}\n    images: {{nvidia: r/chat:cuda}}\n"
        "    tracks:\n      nvidia: {{replicas: 1}}\n"
    )
    values_dir = tree(
        tmp_path, {"teams/ml.yaml": service.format(phase="shfit-10", routing="servce")}
    )
    assert lines(values_dir) == [
        "values/teams/ml.yaml:5:12: VAL001 'shfit-10' is not one of validate, dual-run, shift-N "
        "(1..99, percent to the new track), primary-new, fallback (at $.services.chat.phase); "
        "did you mean 'shift-10'?",
        "values/teams/ml.yaml:6:14: VAL001 'servce' is not one of service, gateway, istio (at "
        "$.services.chat.routing); did you mean 'service'?",
    ]
    # nothing close: the set alone
    values_dir = tree(tmp_path / "far", {"teams/ml.yaml": service.format(phase="zzz", routing="x")})
    assert [line.rsplit("(at", 1)[1] for line in lines(values_dir)] == [
        " $.services.chat.phase)",
        " $.services.chat.routing)",
    ]


def test_a_misnamed_environment_file_or_override_gets_the_name_it_likely_meant(
    tmp_path: Path,
) -> None:
    values_dir = tree(
        tmp_path,
        {"environments/prd.yaml": "{}\n", "environments/staging.yaml": "teams: {mll: {}}\n"},
    )
    assert lines(values_dir) == [
        "values/environments/prd.yaml: REF002 environment 'prd' is not listed in fleet.yaml; did "
        "you mean 'prod'? rename the file to an environment of fleet.yaml, or add it to "
        "environments in values/fleet.yaml, or remove the file",
        "values/environments/staging.yaml:1:9: REF002 override for unknown team 'mll' (at "
        "$.teams.mll); did you mean 'ml'? known teams: ml",
    ]


# ---- shared devices (docs/allocation.md) --------------------------------------------------------


def test_a_shared_vendor_counts_and_prices_shares_under_the_renamed_resource(
    tmp_path: Path,
) -> None:
    """SHARED_NVIDIA: 1 GPU on one node, shared 4 ways. Two nodes of 2 GPUs shared 3 ways make
    12 shares; costWeight 1.5 prices a whole GPU, so a share costs 0.5, and an A100 priced at
    3 (costWeights) a share of it 1. nvidia is unchanged."""
    shared = SHARED_NVIDIA.replace("timeSlicing: {replicas: 4}", "timeSlicing: {replicas: 3}")
    shared = shared.replace("devicesPerNode: 1, nodes: [n3]", "devicesPerNode: 2, nodes: [n3, n4]")
    view = values.load(
        tree(
            tmp_path,
            {"vendors/nvidia-shared.yaml": shared + "costWeight: 1.5\ncostWeights: {A100: 3}\n"},
        )
    ).envs["prod"]
    nvidia, vendor = view.vendor("nvidia"), view.vendor("nvidia-shared")
    assert nvidia is not None and vendor is not None
    assert vendor.resource_name == "nvidia.com/gpu.shared"
    assert (vendor.catalog, nvidia.catalog) == ("nvidia", "nvidia")
    assert vendor.sharing == Sharing(sharing_mode("timeSlicing"), 3, "nvidia.com/gpu")
    (pool,) = vendor.pools
    assert (pool.devices_per_node, pool.replicas, pool.units_per_node) == (2, 3, 6)
    assert (pool.capacity, vendor.capacity, vendor.units) == (12, 12, "shares")
    assert vendor.cost_weight == 0.5
    assert (vendor.model_cost_weight("a100"), vendor.model_cost_weight("H100")) == (1.0, 0.5)
    config = vendor.device_plugin.config
    assert config is not None and config.mps is not None
    assert config == PluginConfig(
        "CONFIG_FILE", "v1", ".shared", ("timeSlicing", "mps", "mig"), config.mps
    )
    assert (nvidia.resource_name, nvidia.sharing, nvidia.cost_weight) == (
        "nvidia.com/gpu",
        None,
        1.0,
    )
    assert (nvidia.pools[0].replicas, nvidia.capacity, nvidia.units) == (1, 8, "devices")


def test_an_mps_vendor_counts_shares_like_time_slicing_and_knows_its_daemon(
    tmp_path: Path,
) -> None:
    """MPS_NVIDIA: the same renamed resource and shares as time-slicing, one per pod (MPS
    forces failRequestsGreaterThanOne); the catalog's MPS control daemon is on its config."""
    view = values.load(tree(tmp_path, {"vendors/nvidia-mps.yaml": MPS_NVIDIA})).envs["prod"]
    vendor = view.vendor("nvidia-mps")
    assert vendor is not None and vendor.sharing is not None
    assert vendor.sharing == Sharing(sharing_mode("mps"), 4, "nvidia.com/gpu")
    assert (vendor.resource_name, vendor.units, vendor.capacity) == (
        "nvidia.com/gpu.shared",
        "shares",
        4,
    )
    assert vendor.sharing.one_per_pod
    assert vendor.sharing.per_device == "shared 4 ways by MPS"
    config = vendor.device_plugin.config
    assert config is not None and config.mps is not None
    assert (config.mps.root, config.mps.container_root, config.mps.env) == (
        "/run/nvidia/mps",
        "/mps",
        "MPS_ROOT",
    )
    assert (config.mps.command, config.mps.mount_command, config.mps.max_replicas) == (
        ("mps-control-daemon",),
        ("mps-control-daemon", "mount-shm"),
        48,
    )


def test_mps_beyond_the_daemons_clients_per_device_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    """48 clients per GPU is the daemon's limit: 48 is fine, 49 is ALC001 at replicas."""
    ok = MPS_NVIDIA.replace("replicas: 4", "replicas: 48")
    assert [f.code for f in findings(tree(tmp_path / "ok", {"vendors/nvidia-mps.yaml": ok}))] == []
    over = MPS_NVIDIA.replace("replicas: 4", "replicas: 49")
    assert lines(tree(tmp_path / "over", {"vendors/nvidia-mps.yaml": over})) == [
        "values/vendors/nvidia-mps.yaml:3:19: ALC001 vendor nvidia-mps shares its devices 49 "
        "ways by MPS, but its plugin's MPS control daemon takes at most 48 clients per device "
        "(at $.sharing.mps.replicas); share each device at most 48 ways"
    ]


def test_mps_without_a_daemon_in_the_catalog_is_refused(tmp_path: Path) -> None:
    """A vendor outside the catalog whose plugin's config file offers MPS but records no daemon:
    nothing would run the daemon the plugin waits for."""
    own = (
        MPS_NVIDIA.replace("catalog: nvidia\n", "")
        .replace(
            "devicePlugin: {name: nvidia-device-plugin-mps}",
            "devicePlugin:\n  {name: p, image: i, version: v1, namespace: n, configFile: {env: C, "
            "version: v1, sharedSuffix: .s, sharing: [mps], sources: ['a/b c d']},\n"
            "   volumes: [{name: d, hostPath: {path: /var/lib/kubelet/device-plugins}}],\n"
            "   volumeMounts: [{name: d, mountPath: /var/lib/kubelet/device-plugins}]}",
        )
        .replace("nvidia-mps", "example")
        + "resourceName: example.com/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
        "taints: [{key: example.com/gpu, value: 'true', effect: NoSchedule}]\n"
    )
    (finding,) = findings(tree(tmp_path, {"vendors/example.yaml": own}))
    assert (finding.code, finding.message, finding.hint) == (
        "ALC001",
        "vendor example shares its devices 4 ways by MPS, but the catalog records no MPS "
        "control daemon for its plugin (devicePlugin.configFile.mps)",
        "use timeSlicing, or a vendor whose catalog entry records the daemon",
    )


def test_sharing_by_a_plugin_without_a_config_file_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    """Ascend's catalog entry records no config file: ALC001 at the strategy's key, and the
    vendor is left out (no cascade of findings about its pools)."""
    ascend = "sharing:\n  timeSlicing: {replicas: 2}\n" + ASCEND_910B
    assert lines(tree(tmp_path, {"vendors/ascend.yaml": ascend})) == [
        "values/vendors/ascend.yaml:2:3: ALC001 vendor ascend shares its devices by timeSlicing, "
        "but its device plugin cannot: the catalog records no config file for it "
        "(devicePlugin.configFile) (at $.sharing.timeSlicing); "
        "remove `sharing`, or use a vendor whose plugin shares devices this way "
        "(docs/allocation.md lists them)"
    ]


def test_a_config_file_without_the_strategy_names_what_it_offers(tmp_path: Path) -> None:
    """A config file (written whole: the schema wants every fact) that offers no sharing."""
    nvidia = (
        "devicePlugin:\n  configFile:\n    {env: C, version: v1, sharedSuffix: .s, sharing: [], "
        "sources: ['a/b c d']}\n"
        "sharing:\n  timeSlicing: {replicas: 2}\n" + NVIDIA
    )
    assert [f.message for f in findings(tree(tmp_path, {"vendors/nvidia.yaml": nvidia}))] == [
        "vendor nvidia shares its devices by timeSlicing, but its device plugin cannot: its "
        "config file offers no sharing"
    ]


def test_the_plugin_refuses_fewer_than_two_replicas_and_so_does_the_schema(
    tmp_path: Path,
) -> None:
    shared = SHARED_NVIDIA.replace("replicas: 4", "replicas: 1")
    (finding,) = findings(tree(tmp_path, {"vendors/nvidia-shared.yaml": shared}))
    assert (finding.code, str(finding.location), finding.path) == (
        "VAL001",
        "values/vendors/nvidia-shared.yaml:3:27",
        "$.sharing.timeSlicing.replicas",
    )


def test_a_vendor_file_adds_a_model_to_its_catalog_dra_driver(tmp_path: Path) -> None:
    """What ALC003's hint says to do: draDriver.models.A800 in the vendor file, merged with the
    catalog's driver; the other models stay."""
    a800 = DRA_NVIDIA.replace("h100-dra, model: H100", "a800-dra, model: A800") + (
        "draDriver:\n  models:\n    A800: {prefix: NVIDIA A800, source: a/b c d}\n"
    )
    vendor = (
        values.load(tree(tmp_path, {"vendors/nvidia-dra.yaml": a800}))
        .envs["prod"]
        .vendor("nvidia-dra")
    )
    assert vendor is not None and vendor.dra is not None
    assert vendor.dra.prefixes == {
        "A100": "NVIDIA A100",
        "H100": "NVIDIA H100",
        "A800": "NVIDIA A800",
    }


def test_a_dra_driver_missing_facts_names_each(tmp_path: Path) -> None:
    """A vendor outside the catalog writing its own driver with only a name: VAL003 for each
    fact it lacks, at the driver, and no traceback."""
    own = (
        DRA_NVIDIA.replace("catalog: nvidia\n", "")
        + "resourceName: example.com/gpu\nselectorLabel: accelerator\nmodelLabel: gpu-model\n"
        "taints: [{key: example.com/gpu, value: 'true', effect: NoSchedule}]\n"
        "devicePlugin: {name: p, image: i, version: v1, namespace: n}\n"
        "draDriver: {name: gpu.example.com}\n"
    )
    found = findings(tree(tmp_path, {"vendors/example.yaml": own}))
    # (Its plugin's mount is VAL003 too: not what this test is about.)
    assert sorted(f.message for f in found if f.message.startswith("draDriver")) == [
        "draDriver.modelAttribute is not set",
        "draDriver.models is not set",
        "draDriver.sources is not set",
        "draDriver.typeAttribute is not set",
        "draDriver.typeValue is not set",
    ]
    assert {f.hint for f in found if f.code == "VAL003"} >= {
        "set draDriver.models in values/vendors/example.yaml"
    }


def test_mig_facts_missing_from_the_merged_entry_are_named(tmp_path: Path) -> None:
    """A vendor outside the catalog partitioning by MIG with a config file but no `mig` facts:
    VAL003 for each one the loader needs, not a traceback."""
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
    assert sorted((f.code, f.message) for f in found if f.message.startswith("mig")) == [
        ("VAL003", "mig.configLabel is not set"),
        ("VAL003", "mig.layoutPrefix is not set"),
        ("VAL003", "mig.plugin.env is not set"),
        ("VAL003", "mig.plugin.securityContext is not set"),
        ("VAL003", "mig.profiles is not set"),
        ("VAL003", "mig.resourcePrefix is not set"),
        ("VAL003", "mig.sources is not set"),
        ("VAL003", "mig.stateLabel is not set"),
        ("VAL003", "mig.stateReady is not set"),
    ]


# ---- MIG partitions (docs/allocation.md) -------------------------------------------------------


def test_a_mig_vendor_counts_and_prices_the_instances_of_its_profile(tmp_path: Path) -> None:
    """MIG_NVIDIA with 1g.20gb (4 per 80GB GPU, catalog mig.profiles): two nodes of 2 GPUs are 16
    instances of nvidia.com/mig-1g.20gb; costWeight 2 prices a whole GPU, an instance 0.5; the
    nodes carry the MIG manager's layout label; the plugin runs the mixed strategy, with the
    env and capability the catalog's mig.plugin gives its container."""
    mig = MIG_NVIDIA.replace("3g.40gb", "1g.20gb").replace("nodes: [n5]", "nodes: [n5, n6]")
    view = values.load(tree(tmp_path, {"vendors/nvidia-mig.yaml": mig + "costWeight: 2\n"})).envs[
        "prod"
    ]
    vendor = view.vendor("nvidia-mig")
    assert vendor is not None
    assert vendor.sharing == Sharing(
        sharing_mode("mig"),
        4,
        "nvidia.com/mig-1g.20gb",
        "1g.20gb",
        "mixed",
        ("nvidia.com/mig.config", "all-1g.20gb"),
        ("nvidia.com/mig.config.state", "success"),
        PluginContainer(
            ({"name": "NVIDIA_MIG_MONITOR_DEVICES", "value": "all"},),
            {"capabilities": {"add": ["SYS_ADMIN"]}},
        ),
    )
    assert (vendor.resource_name, vendor.quota_key) == (
        "nvidia.com/mig-1g.20gb",
        "requests.nvidia.com/mig-1g.20gb",
    )
    (pool,) = vendor.pools
    assert (pool.replicas, pool.units_per_node, pool.capacity) == (4, 8, 16)
    assert (vendor.units, vendor.unit_size, vendor.cost_weight) == ("instances", 0.25, 0.5)
    assert pool.labels["nvidia.com/mig.config"] == "all-1g.20gb"
    assert pool.pci_devices == ("20b2", "20b5")
    assert vendor.sharing.per_device == "partitioned into 4 MIG 1g.20gb instances"
    assert vendor.sharing.counted_in == "MIG 1g.20gb instances (1/4)"
    assert not vendor.sharing.one_per_pod
    nvidia = view.vendor("nvidia")
    assert nvidia is not None and "nvidia.com/mig.config" not in nvidia.pools[0].labels


def test_a_profile_with_attributes_is_named_with_a_dot(tmp_path: Path) -> None:
    """1g.10gb+me, added to the catalog's profiles by the vendor file: the plugin advertises it
    as mig-1g.10gb.me and the default layout is all-1g.10gb.me."""
    mig = MIG_NVIDIA.replace("3g.40gb", "1g.10gb+me") + (
        "mig:\n  profiles:\n    1g.10gb+me:\n      instances: 1\n"
        "      devices: ['20b2', '20b5']\n      source: a/b c d\n"
    )
    vendor = (
        values.load(tree(tmp_path, {"vendors/nvidia-mig.yaml": mig}))
        .envs["prod"]
        .vendor("nvidia-mig")
    )
    assert vendor is not None and vendor.sharing is not None
    assert (vendor.resource_name, vendor.sharing.layout_label[1]) == (
        "nvidia.com/mig-1g.10gb.me",
        "all-1g.10gb.me",
    )


def test_a_mig_profile_the_catalog_lacks_is_refused_at_its_line(tmp_path: Path) -> None:
    """2g.5gb is no profile of any GPU the catalog records: ALC006 at the profile, naming the
    ones it knows; the vendor is left out, nothing else is said of it."""
    mig = MIG_NVIDIA.replace("3g.40gb", "2g.5gb")
    assert lines(tree(tmp_path, {"vendors/nvidia-mig.yaml": mig})) == [
        "values/vendors/nvidia-mig.yaml:3:18: ALC006 vendor nvidia-mig: MIG profile '2g.5gb' is "
        "not one the catalog records for its devices (mig.profiles: 1g.10gb, 1g.20gb, 1g.5gb, "
        "2g.10gb, 2g.20gb, 3g.20gb, 3g.40gb, 4g.20gb, 4g.40gb, 7g.40gb, 7g.80gb) (at "
        "$.sharing.mig.profile); use one of 1g.10gb, 1g.20gb, 1g.5gb, 2g.10gb, 2g.20gb, "
        "3g.20gb, 3g.40gb, 4g.20gb, 4g.40gb, 7g.40gb, 7g.80gb, or add the profile to "
        "`mig.profiles` in the vendor file with its instances per device, devices and source"
    ]


def test_a_pool_holding_gpus_the_profile_is_not_made_for_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    """3g.40gb is an 80GB GPU's profile. A pool of model A100 without pciDevices matches the 40GB
    A100s too (at its model); one whose pciDevices name a 40GB one (20b0) is refused at
    pciDevices; the 80GB pool beside them is fine, and so is a pool of the 40GB ones on a 40GB
    profile's vendor."""
    mig = MIG_NVIDIA.replace(
        "  - {name: a100-mig",
        "  - {name: all-a100, model: A100, devicesPerNode: 2, nodes: [n6]}\n"
        "  - {name: a40, model: A100, pciDevices: ['20b2', '20b0'], devicesPerNode: 2, "
        "nodes: [n7]}\n"
        "  - {name: a100-mig",
    )
    small = (
        MIG_NVIDIA.replace("3g.40gb", "3g.20gb")
        .replace('["20b2", "20b5"]', '["20b0"]')
        .replace("nvidia-gpu-mig", "nvidia-gpu-small")
        .replace("-mig}", "-small}")
        .replace("n5", "n8")
    )
    found = findings(
        tree(tmp_path, {"vendors/nvidia-mig.yaml": mig, "vendors/nvidia-small.yaml": small})
    )
    assert [(f.code, str(f.location), f.path) for f in found] == [
        ("ALC006", "values/vendors/nvidia-mig.yaml:8:29", "$.pools[0].model"),
        ("ALC006", "values/vendors/nvidia-mig.yaml:9:42", "$.pools[1].pciDevices"),
    ]
    assert [f.message for f in found] == [
        "pool 'all-a100': MIG profile 3g.40gb applies to devices 20b2, 20b5, 20f3, 20f5, 2322, "
        "2324, 2330, 2331, but the pool matches 20b0, 20b1, 20b3, 20b8, 20f0, 20f1, 20f2 as well",
        "pool 'a40': MIG profile 3g.40gb applies to devices 20b2, 20b5, 20f3, 20f5, 2322, 2324, "
        "2330, 2331, but the pool matches 20b0 as well",
    ]
    assert found[0].hint == (
        "set the pool's pciDevices to the devices of 3g.40gb it holds (of 20b2, 20b5, 20f3, "
        "20f5, 2322, 2324, 2330, 2331), or a profile all its devices have"
    )


def test_a_mig_pool_whose_devices_are_unknown_is_refused(tmp_path: Path) -> None:
    """A model the catalog has no PCI IDs for and no pciDevices: the layout may not apply."""
    mig = MIG_NVIDIA.replace(', pciDevices: ["20b2", "20b5"]', "").replace("A100", "B200")
    (finding,) = [
        f for f in findings(tree(tmp_path, {"vendors/nvidia-mig.yaml": mig})) if f.code == "ALC006"
    ]
    assert finding.message == (
        "pool 'a100-mig': MIG profile 3g.40gb applies to devices 20b2, 20b5, 20f3, 20f5, 2322, "
        "2324, 2330, 2331, but its model's PCI device IDs are not known"
    )


def test_mig_by_a_plugin_whose_config_file_offers_no_mig_is_refused(tmp_path: Path) -> None:
    nvidia = MIG_NVIDIA.replace(
        "devicePlugin: {name: nvidia-device-plugin-mig}",
        "devicePlugin:\n  name: nvidia-device-plugin-mig\n  configFile:\n    {env: C, "
        "version: v1, sharedSuffix: .s, sharing: [timeSlicing], sources: ['a/b c d']}",
    )
    assert [f.message for f in findings(tree(tmp_path, {"vendors/nvidia-mig.yaml": nvidia}))] == [
        "vendor nvidia-mig shares its devices by mig, but its device plugin cannot: its config "
        "file offers timeSlicing"
    ]


# ---- static vNPUs (docs/allocation.md) ---------------------------------------------------------


def test_a_vnpu_vendor_counts_and_prices_the_vnpus_the_site_makes(tmp_path: Path) -> None:
    """VNPU_ASCEND: 2 NPUs, 4 vNPUs of vir06_1c_16g each, are 8 of the template's resource
    (huawei.com/Ascend910-6c.1cpu.16g, catalog vnpu.templates); costWeight 2 prices an NPU,
    a vNPU 0.5; one per pod; no config file (the plugin finds vNPUs by itself)."""
    view = values.load(
        tree(tmp_path, {"vendors/ascend-vnpu.yaml": VNPU_ASCEND + "costWeight: 2\n"})
    ).envs["prod"]
    vendor = view.vendor("ascend-vnpu")
    assert vendor is not None and vendor.sharing is not None
    assert vendor.sharing == Sharing(
        sharing_mode("vnpu"), 4, "huawei.com/Ascend910-6c.1cpu.16g", "vir06_1c_16g"
    )
    assert (vendor.resource_name, vendor.quota_key) == (
        "huawei.com/Ascend910-6c.1cpu.16g",
        "requests.huawei.com/Ascend910-6c.1cpu.16g",
    )
    (pool,) = vendor.pools
    assert (pool.replicas, pool.units_per_node, vendor.capacity) == (4, 8, 8)
    assert (vendor.units, vendor.unit_size, vendor.cost_weight) == ("vNPUs", 0.25, 0.5)
    assert vendor.sharing.one_per_pod
    assert vendor.sharing.per_device == "split into 4 vNPUs of template vir06_1c_16g"
    assert vendor.sharing.counted_in == "vir06_1c_16g vNPUs (1/4)"
    assert vendor.device_plugin.config is None


def test_a_vnpu_template_the_catalog_lacks_is_refused_at_its_line(tmp_path: Path) -> None:
    """vir02 is a 910A template, not one the catalog records (its 910B ones)."""
    vnpu = VNPU_ASCEND.replace("vir06_1c_16g", "vir02")
    assert lines(tree(tmp_path, {"vendors/ascend-vnpu.yaml": vnpu})) == [
        "values/vendors/ascend-vnpu.yaml:3:20: ALC006 vendor ascend-vnpu: vNPU template "
        "'vir02' is not one the catalog records for its devices (vnpu.templates: vir05_1c_16g, "
        "vir06_1c_16g, vir10_3c_32g, vir12_3c_32g) (at $.sharing.vnpu.template); use one of "
        "vir05_1c_16g, vir06_1c_16g, vir10_3c_32g, vir12_3c_32g, or add the template to "
        "`vnpu.templates` in the vendor file with its resource suffix, models and source"
    ]


def test_a_vnpu_pool_of_another_model_is_refused_at_its_model(tmp_path: Path) -> None:
    """The 910B templates on a 310P pool: ALC006 at the pool's model; a 910B pool beside it
    (model written 910B: models are one whatever their case) is fine."""
    vnpu = VNPU_ASCEND.replace(
        "  - {name: 910b-vnpu, model: 910b,",
        "  - {name: p310, model: 310p, devicesPerNode: 2, nodes: [npu-v2]}\n"
        "  - {name: 910b-vnpu, model: 910B,",
    )
    found = findings(tree(tmp_path, {"vendors/ascend-vnpu.yaml": vnpu}))
    assert [(f.code, str(f.location), f.message, f.hint) for f in found] == [
        (
            "ALC006",
            "values/vendors/ascend-vnpu.yaml:8:25",
            "pool 'p310': vNPU template vir06_1c_16g is for 910b chips, not 310p",
            "use a template made for 310p (vnpu.templates), or put the pool in a vendor file "
            "of its own",
        )
    ]


def test_a_vendor_file_adds_a_vnpu_template(tmp_path: Path) -> None:
    """A template the catalog leaves out (a 910B inference one), added with its facts."""
    vnpu = VNPU_ASCEND.replace("vir06_1c_16g", "vir05_1c_8g") + (
        "vnpu:\n  templates:\n    vir05_1c_8g: {suffix: 5c.1cpu.8g, models: [910b], "
        "source: a/b c d}\n"
    )
    vendor = (
        values.load(tree(tmp_path, {"vendors/ascend-vnpu.yaml": vnpu}))
        .envs["prod"]
        .vendor("ascend-vnpu")
    )
    assert vendor is not None
    assert vendor.resource_name == "huawei.com/Ascend910-5c.1cpu.8g"


# ---- devices claimed through a DRA driver (docs/allocation.md) ----------------------------------


def test_a_dra_vendor_counts_its_devices_by_its_device_class(tmp_path: Path) -> None:
    """DRA_NVIDIA: allocated by NVIDIA's DRA driver (the catalog's draDriver). Its quota line and
    resource name are its DeviceClass's claimed devices; its capacity is whole devices."""
    view = values.load(tree(tmp_path, {"vendors/nvidia-dra.yaml": DRA_NVIDIA})).envs["prod"]
    vendor = view.vendor("nvidia-dra")
    assert vendor is not None and vendor.dra is not None
    assert (vendor.resource_name, vendor.quota_key, vendor.device_class) == (
        "nvidia-dra.deviceclass.resource.k8s.io/devices",
        "nvidia-dra.deviceclass.resource.k8s.io/devices",
        "nvidia-dra",
    )
    assert vendor.dra == DraDriver(
        "gpu.nvidia.com",
        "type",
        "gpu",
        "productName",
        {"A100": "NVIDIA A100", "H100": "NVIDIA H100"},
        # the platform add-on that installs it (platform.nvidiaDraDriver)
        "nvidiaDraDriver",
    )
    assert (vendor.capacity, vendor.units, vendor.unit_size, vendor.sharing) == (
        8,
        "devices",
        1.0,
        None,
    )
    nvidia = view.vendor("nvidia")
    assert nvidia is not None
    assert (nvidia.dra, nvidia.quota_key, nvidia.device_class) == (
        None,
        "requests.nvidia.com/gpu",
        "",
    )


def test_dra_without_what_it_needs_is_refused_at_its_line(tmp_path: Path) -> None:
    """Three vendors: Ascend's entry has no DRA driver; one shares by its plugin as well; one has
    an A800 pool, a model the driver's entry has no productName for (at the pool's model)."""
    ascend = "allocation: dra\n" + ASCEND_910B
    shared = DRA_NVIDIA.replace(
        "allocation: dra\n", "allocation: dra\nsharing:\n  timeSlicing: {replicas: 2}\n"
    )
    a800 = DRA_NVIDIA.replace("h100-dra, model: H100", "a800-dra, model: A800").replace("n4", "n5")
    files = {
        "vendors/ascend.yaml": ascend,
        "vendors/nvidia-dra.yaml": shared,
        "vendors/nvidia-old.yaml": a800.replace("nvidia-gpu-dra", "nvidia-gpu-old").replace(
            "dcgm-exporter-dra", "dcgm-exporter-old"
        ),
    }
    assert [
        g.split(" (at ")[0] + " (at " + g.split(" (at ")[1].split(")")[0] + ")"
        for g in lines(tree(tmp_path, files))
    ] == [
        "values/vendors/ascend.yaml:1:13: ALC003 vendor ascend is allocated by DRA, but the catalog "
        "records no DRA driver for it (draDriver) (at $.allocation)",
        "values/vendors/nvidia-dra.yaml:2:13: ALC003 vendor nvidia-dra is allocated by DRA and "
        "shares its devices by its device plugin's config file: a DRA vendor runs no device "
        "plugin (at $.allocation)",
        "values/vendors/nvidia-old.yaml:6:29: ALC003 pool 'a800-dra': the catalog records no "
        "productName for model 'A800' under DRA driver gpu.nvidia.com, so no DeviceClass can "
        "select its devices (at $.pools[0].model)",
    ]
    hints = [f.hint for f in findings(tree(tmp_path, files))]
    assert hints == [
        "use a vendor whose catalog entry has a DRA driver (docs/allocation.md), or set "
        "draDriver in the vendor file",
        "remove `sharing`, or `allocation: dra`",
        "add draDriver.models.A800 (prefix and source) to the vendor file, or use a model it "
        "knows: A100, H100",
    ]
