"""MPS (docs/allocation.md, "MPS"): time-slicing through NVIDIA's MPS control daemon, which
limits each pod to 1/replicas of a device's memory and compute. Values: `sharing.mps.replicas`;
the catalog records the daemon under devicePlugin.configFile.mps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.values.allocation.base import Context, PluginConfig, Sharing
from generator.values.allocation.timeslicing import SETTINGS, TimeSlicing
from generator.values.schemakit import ENV_VAR, NODE_PATH, SOURCES, array, obj, string

# What the catalog knows of a plugin's MPS control daemon (configFile.mps, docs/allocation.md):
# the host folder it shares with the plugin and the pods, where both see it, the commands that
# run it and mount its memory, and how many clients one device takes. Catalog data, cited.
PLUGIN_MPS = obj(
    {
        "root": string(NODE_PATH, description="the host folder the daemon, plugin and pods share"),
        "containerRoot": string(NODE_PATH, description="where the daemon and plugin see it"),
        "env": string(
            r"^[A-Za-z_][A-Za-z0-9_]*$", description="the plugin's variable naming the root"
        ),
        "command": array(string(minLength=1), minItems=1, description="the daemon's command"),
        "mountCommand": array(
            string(minLength=1), minItems=1, description="its init container's: mounts its memory"
        ),
        "daemonEnv": array(ENV_VAR, description="the daemon container's environment"),
        "maxReplicas": {"type": "integer", "minimum": 2, "description": "clients per device"},
        "sources": SOURCES,
    },
    ("root", "containerRoot", "env", "command", "mountCommand", "maxReplicas", "sources"),
)


@dataclass(frozen=True, eq=False)
class Mps(TimeSlicing):
    """Time-slicing's shares and config file (under `sharing.mps`), with the daemon beside the
    plugin and a cap on the shares per device."""

    def resolve(
        self, ctx: Context, settings: dict[str, Any], resource: str, config: PluginConfig | None
    ) -> Sharing | None:
        config = self.offered(ctx, config)
        if config is None:
            return None
        replicas = int(settings["replicas"])
        if config.mps is None or replicas > config.mps.max_replicas:
            ctx.refuse(
                "ALC001",
                f"vendor {ctx.vendor_id} shares its devices {replicas} ways by MPS, but "
                + (
                    f"its plugin's MPS control daemon takes at most {config.mps.max_replicas} "
                    "clients per device"
                    if config.mps
                    else "the catalog records no MPS control daemon for its plugin "
                    "(devicePlugin.configFile.mps)"
                ),
                ("sharing", self.key, "replicas"),
                f"share each device at most {config.mps.max_replicas} ways"
                if config.mps
                else "use timeSlicing, or a vendor whose catalog entry records the daemon",
            )
            return None
        return Sharing(self, replicas, resource)

    def simulated(self, vendor_id: str, resource: str, sharing: Sharing) -> str:
        return (
            f"vendor {vendor_id} shares its devices by MPS: its simulated nodes advertised "
            f"{sharing.replicas} {resource} per device, as its device plugin "
            "would with the config file rendered for it, and the real scheduler placed pods "
            "by them; neither the plugin nor its MPS control daemon runs here (their pods "
            "are placed, not run), so the daemon's start, its limit of each pod to "
            f"1/{sharing.replicas} of a device's memory and compute, and the plugin's "
            "waiting for it were not exercised"
        )


MPS = Mps(
    key="mps",
    units="shares",
    words=("shared {n} ways by MPS", "1/{n} shares"),
    settings=SETTINGS,
    # NVIDIA/k8s-device-plugin api/config/v1/config.go v0.17.1: forced under MPS.
    one_per_pod=("share", "failRequestsGreaterThanOne, which MPS forces"),
    mps_daemon=True,
    plugin_file={"mps": PLUGIN_MPS},
)
