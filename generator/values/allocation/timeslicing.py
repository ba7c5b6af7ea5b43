"""Time-slicing (docs/allocation.md, "Time-slicing"): the device plugin advertises each device
`replicas` times, renamed with its shared suffix, and CUDA gives each process an equal share of
time. Values: `sharing.timeSlicing.replicas`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generator.values.allocation.base import Context, PluginConfig, Sharing, SharingMode
from generator.values.schemakit import obj

SETTINGS = obj(
    {
        "replicas": {
            "type": "integer",
            # The plugin refuses fewer than 2 (NVIDIA/k8s-device-plugin
            # api/config/v1/replicas.go v0.17.1: "number of replicas must be >= 2");
            # MPS takes fewer (the catalog's configFile.mps.maxReplicas, ALC001).
            "minimum": 2,
            "maximum": 1024,
            "description": "pods that share one device",
        },
    },
    ("replicas",),
)


@dataclass(frozen=True, eq=False)
class TimeSlicing(SharingMode):
    """Shares of a device that its pods use in turn; MPS (mps.py) is this with limits."""

    def resolve(
        self, ctx: Context, settings: dict[str, Any], resource: str, config: PluginConfig | None
    ) -> Sharing | None:
        if self.offered(ctx, config) is None:
            return None
        return Sharing(self, int(settings["replicas"]), resource)

    def advertised(self, sharing: Sharing, config: PluginConfig | None) -> str:
        # renameByDefault: a share is told from a whole device by the plugin's shared suffix.
        assert config is not None  # resolve() refused a vendor whose plugin has no file
        return sharing.resource + config.shared_suffix

    def plugin_file_settings(self, sharing: Sharing, config: PluginConfig) -> dict[str, Any]:
        """As NVIDIA's plugin reads it (catalog devicePlugin.configFile, cited there): each
        device advertised `replicas` times, renamed with the shared suffix (renameByDefault) so
        quotas and pods tell shares from whole devices, and a pod asking for more than one share
        refused (failRequestsGreaterThanOne), since two shares of a time-sliced device give no
        more of it than one (the plugin's README, "With CUDA Time-Slicing")."""
        return {
            "version": config.version,
            "sharing": {
                self.key: {
                    "renameByDefault": True,
                    "failRequestsGreaterThanOne": True,
                    "resources": [{"name": sharing.resource, "replicas": sharing.replicas}],
                }
            },
        }

    def simulated(self, vendor_id: str, resource: str, sharing: Sharing) -> str:
        return (
            f"vendor {vendor_id} shares its devices by {self.key}: its simulated "
            f"nodes advertised {sharing.replicas} {resource} per device, as its "
            "device plugin would with the config file rendered for it, and the real "
            "scheduler placed pods by them; the plugin itself does not run here, so its "
            "reading of that file, which device each share is, and how the pods of one "
            "device share its time and memory were not exercised"
        )


TIME_SLICING = TimeSlicing(
    key="timeSlicing",
    units="shares",
    words=("shared {n} ways", "1/{n} shares"),
    settings=SETTINGS,
    # NVIDIA/k8s-device-plugin README.md v0.17.1, "With CUDA Time-Slicing": the kubelet's
    # admission fails the pod (UnexpectedAdmissionError); the fleet's config file sets it.
    one_per_pod=("share", "failRequestsGreaterThanOne, as the fleet configures it"),
)
