"""Unified cross-vendor accelerator monitoring: scrape config, recording rules, dashboard.

Everything is built as data from the vendor catalog and values (see docs/monitoring.md):
`sources` reads each vendor's exporter facts, `scrape` turns them into PodMonitors and a plain
`scrape_configs` fragment, `rules` into recording rules with one set of series and labels for
every vendor, and `dashboard` into a Grafana dashboard that only queries those series.
"""

from . import checks as checks  # registers the MON checks (generator/policy.py imports them too)
