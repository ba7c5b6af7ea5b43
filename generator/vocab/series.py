"""The unified series every vendor's exporter is mapped to (docs/monitoring.md): their names, the
labels the recording rules give them, and the units exporters report in. The recording rules,
the alerts and the dashboard write and read these, and whatever proves the series exist reads
the same names.
"""

from __future__ import annotations

# Bytes per unit of each memory unit the values schema allows.
BYTES_PER_UNIT: dict[str, int] = {
    "bytes": 1,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
}
# Percent per unit of each utilisation unit.
PERCENT_PER_UNIT: dict[str, int] = {"percent": 1, "ratio": 100}

# The unified labels, in the order rules aggregate by them. `partition` tells apart the parts of
# one device an exporter reports on their own (a MIG instance: dcgm-exporter's GPU_I_ID), which
# aggregating without it would fold into one; absent on a whole device's series.
UNIFIED_LABELS = ("node", "device", "partition", "model", "namespace", "pod")
BRAND_LABEL = "gpu_brand"
# The label every recorded series and alert of a cluster carries in an environment of several
# clusters (docs/multi-cluster.md): one Prometheus or Grafana over many clusters tells them apart.
CLUSTER_LABEL = "cluster"
VENDOR_LABEL = "vendor"

# The recording rules' group, and the series they record.
GROUP = "accelerators.unified"
UTILIZATION = "gpu:utilization:percent"
MEMORY_USED = "gpu:memory_used:bytes"
MEMORY_TOTAL = "gpu:memory_total:bytes"
MEMORY_RATIO = "gpu:memory_used:ratio"
DEVICES = "gpu:devices:count"
QUOTA_USED = "team_vendor:gpu_quota_used:devices"
QUOTA_HARD = "team_vendor:gpu_quota_hard:devices"
QUOTA_RATIO = "team_vendor:gpu_quota_used:ratio"
COST_DEVICES = "team_vendor:gpu_cost_weighted_devices:sum"
COST_HOURS = "team_vendor:gpu_cost_weighted_device_hours:1h"
# The per-team data the quota and cost rules join with (docs/monitoring.md, "How the per-team
# rules work"): which team a namespace is of (value 1), and a team's cost weight per resource,
# labelled with the vendors its use of the resource counts against. Named as Prometheus's
# "level:metric:operations" (https://prometheus.io/docs/practices/rules/, "Naming": the level
# is the output's labels).
TEAM_INFO = "namespace:accelerator_team:info"
COST_WEIGHT = "team_vendor:gpu_cost_weight:factor"
KSM_QUOTA = "kube_resourcequota"

RECORDED = (
    UTILIZATION,
    MEMORY_USED,
    MEMORY_TOTAL,
    MEMORY_RATIO,
    DEVICES,
    QUOTA_USED,
    QUOTA_HARD,
    QUOTA_RATIO,
    COST_DEVICES,
    COST_HOURS,
    TEAM_INFO,
    COST_WEIGHT,
)
KSM_METRICS = (KSM_QUOTA,)
