"""Every allocation mode, listed: the loader resolves a vendor's `sharing` and `allocation` by
these lists, and values/schema.py builds the vendor schema from their fragments. A new mode is a
module of its own and a line here; no mode adds itself to a list when it is imported
(tests/project/test_layers.py)."""

from __future__ import annotations

from generator.values.allocation.base import DEVICE_PLUGIN, SharingMode
from generator.values.allocation.dra import DRA, Dra
from generator.values.allocation.mig import MIG
from generator.values.allocation.mps import MPS
from generator.values.allocation.timeslicing import TIME_SLICING
from generator.values.allocation.vnpu import VNPU
from generator.values.schemakit import Schema

# The keys of values `sharing`, in the order values/schema.py has always listed them (the order
# jsonschema reports their errors in).
SHARING_MODES: tuple[SharingMode, ...] = (TIME_SLICING, MPS, VNPU, MIG)
# The values of `allocation` besides the device plugin.
ALLOCATION_MODES: tuple[Dra, ...] = (DRA,)


def sharing_mode(key: str) -> SharingMode:
    """The mode values `sharing.<key>` names (the vendor schema admits no other key)."""
    return {mode.key: mode for mode in SHARING_MODES}[key]


def sharing_settings() -> dict[str, Schema]:
    """The properties of values `sharing`: each mode's settings under its key."""
    return {mode.key: mode.settings for mode in SHARING_MODES}


def plugin_file_modes() -> list[str]:
    """The modes a device plugin's config file may offer (its catalog `configFile.sharing`)."""
    return [mode.key for mode in SHARING_MODES if mode.in_plugin_file]


def plugin_file_props() -> dict[str, Schema]:
    """The keys of devicePlugin.configFile that modes read (the MPS daemon's)."""
    return {key: schema for mode in SHARING_MODES for key, schema in mode.plugin_file.items()}


def allocation_words() -> list[str]:
    """The values of `allocation`: the device plugin (the default), then each mode's."""
    return [DEVICE_PLUGIN, *(mode.key for mode in ALLOCATION_MODES)]


def catalog_props() -> dict[str, Schema]:
    """The keys of a vendor file that hold a mode's catalog facts (draDriver, mig, vnpu), by
    name."""
    modes: tuple[SharingMode | Dra, ...] = (*ALLOCATION_MODES, *SHARING_MODES)
    pairs = [(key, schema) for mode in modes for key, schema in mode.catalog.items()]
    return dict(sorted(pairs, key=lambda pair: pair[0]))
