"""Checks on who provides each node component of a vendor (docs/brownfield.md): one provider
per component and node, and an operator only where the cluster runs it.

Each is a `Check` (policy/checks.py) listed in CHECKS below and in policy/registry.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from generator.builders import operators, platform
from generator.findings import Finding, Severity
from generator.policy.checks import NO_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.values.model import DEVICE_PLUGIN, EXPORTER, Vendor
from generator.values.yamlio import json_path
from generator.vocab import addons
from generator.vocab.addons import OPERATOR

COMPONENTS = (DEVICE_PLUGIN, EXPORTER)


def _handed(ctx: Context) -> Iterable[tuple[Vendor, str]]:
    """(vendor, component) of each component values hand to the vendor's operator."""
    for vendor in ctx.view.vendors:
        for component in COMPONENTS:
            if vendor.provider(component) == OPERATOR:
                yield vendor, component


def operator_known(ctx: Context) -> Iterable[Finding]:
    """A component handed to the vendor's operator needs an operator that runs that component
    (the catalog's `operator` contract): otherwise no one provides it."""
    for vendor, component in _handed(ctx):
        op = vendor.operator
        if op is not None and component in op.parts:
            continue
        path = (component, "provided")
        yield Finding(
            "PRV001",
            f"vendor {vendor.id}: {component}.provided is operator, but its catalog entry "
            f"names no operator that runs its {component}",
            vendor.doc.locate(path),
            json_path(path),
            "set " + component + ".provided: fleet, or site where the cluster runs it another "
            "way (docs/brownfield.md lists the operators the catalog knows)",
        )


def operator_running(ctx: Context) -> Iterable[Finding]:
    """A component handed to the vendor's operator needs a cluster that runs the operator
    (`platform`): otherwise the vendor's pods wait for devices no one advertises, or its series
    never come."""
    for vendor, component in _handed(ctx):
        op = vendor.operator
        if op is None or component not in op.parts or operators.running(ctx.view, vendor):
            continue  # PRV001, or it runs
        path = (component, "provided")
        yield Finding(
            "PRV002",
            f"vendor {vendor.id}: {component}.provided is operator, but this cluster neither "
            f"renders nor declares the {addons.BY_KEY[op.addon].title}: nothing would run its "
            f"{component}",
            vendor.doc.locate(path),
            json_path(path),
            f"declare it in values/fleet.yaml (or the environment's file): platform.{op.addon}"
            ".provided: site where the cluster runs it, or fleet to install it; or set "
            f"{component}.provided: fleet",
        )


def deploy_labels_agree(ctx: Context) -> Iterable[Finding]:
    """A pool label that sets an operator's per-node switch against the providers values
    declare. The operator runs an operand only where the label is "true" (the catalog's
    `operator` contract): any other value on a component handed to the operator keeps it off
    the nodes (no one provides it); "true" on a component the fleet or the site provides puts a
    second one there. The fleet sets these labels itself where the operator runs
    (builders/operators.py)."""
    view = ctx.view
    for vendor in view.vendors:
        op = vendor.operator
        if op is None:
            continue
        for component, part in sorted(op.parts.items()):
            by_operator = vendor.provider(component) == OPERATOR
            for pool in vendor.pools:
                path = ("pools", pool.index, "labels", part.deploy_label)
                value = vendor.doc.get(*path)
                if value is None or (str(value) == "true") == by_operator:
                    continue
                who = "the operator" if by_operator else vendor.provider(component)
                yield Finding(
                    "PRV003",
                    f"vendor {vendor.id} pool {pool.name!r}: label {part.deploy_label}="
                    f"{value} contradicts {component}.provided: {vendor.provider(component)} "
                    f"({who} provides it): "
                    + (
                        "the operator would run no " + component + " on these nodes"
                        if by_operator
                        else "the operator would run a second " + component + " beside it"
                    ),
                    vendor.doc.locate(path, key=True),
                    json_path(path),
                    f"drop the label: the fleet sets {part.deploy_label} from "
                    f"{component}.provided wherever the operator runs",
                )


def dra_driver_declared(ctx: Context) -> Iterable[Finding]:
    """A vendor allocated by DRA needs its driver on its nodes: the fleet installs it
    (`platform.<addon>.provided: fleet`, with the tolerations and affinity its pools need) or the
    site declares it runs one (`site`, which preflight checks: PRE013). Neither said, no one is
    known to provide it."""
    view = ctx.view
    for vendor in view.vendors:
        dra = vendor.dra
        if dra is None or not dra.addon or dra.addon not in addons.BY_KEY:
            continue
        addon = addons.BY_KEY[dra.addon]
        if platform.provided(view, addon) is not None:
            continue
        yield Finding(
            "PRV004",
            f"vendor {vendor.id} is allocated by DRA, but this cluster neither renders nor "
            f"declares the {addon.title}: nothing is known to publish its devices, and its "
            "claims stay pending",
            vendor.doc.anchor(("allocation",)),
            "$.allocation",
            f"declare it in values/fleet.yaml (or the environment's file): "
            f"platform.{addon.key}.provided: fleet to install it with the tolerations and "
            "affinity the pools need, or site where the cluster runs it (preflight checks that "
            "it reaches the pools' nodes, PRE013); docs/brownfield.md",
            severity=Severity.WARNING,
        )


CHECKS: tuple[Check, ...] = (
    Check(
        "PRV001",
        "a component is handed to an operator the vendor's catalog entry does not have",
        operator_known,
        scope=NO_TEAM,
    ),
    Check(
        "PRV002",
        "a component is handed to an operator the cluster neither renders nor declares",
        operator_running,
        scope=NO_TEAM,
    ),
    Check(
        "PRV004",
        "a DRA vendor's driver is neither rendered nor declared",
        dra_driver_declared,
        WARNING,
        scope=NO_TEAM,
    ),
    Check(
        "PRV003",
        "a pool label sets an operator's per-node switch against the declared provider",
        deploy_labels_agree,
        scope=NO_TEAM,
    ),
)
