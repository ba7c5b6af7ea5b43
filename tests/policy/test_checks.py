"""What a check and a manifest rule are, and how a list of them runs (generator/policy/checks.py):
a values check on the base layer and on every environment, identical findings merged and naming
the layers they hold in; a manifest rule on one unit's objects, each finding naming the unit.

The checks and rules here are made for the test: each reports what it was given (the layer, the
unit, the objects), so a check run on the wrong view, or a rule given the wrong unit, shows in the
findings."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from generator.builders.fleet import build_values
from generator.findings import Finding, Location, Severity
from generator.policy.checks import Check, ManifestRule, run_checks, run_rules
from generator.policy.context import Context
from generator.values import loader as values
from generator.values.model import Values
from generator.vocab.objects import Obj
from generator.vocab.units import Unit
from tests.fixtures import context, tree

FLEET_YAML = Location("values/fleet.yaml", 1, 1)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> Values:
    """The default tree: environments staging and prod, and the base layer."""
    return values.load(tree(tmp_path_factory.mktemp("checks")))


def layer_name(ctx: Context) -> Iterable[Finding]:
    """One finding per layer, naming it: differs in every layer, so none merge."""
    yield Finding("TST001", f"layer {ctx.view.env or 'base'}", FLEET_YAML)


def everywhere(ctx: Context) -> Iterable[Finding]:
    """The same finding in every layer."""
    yield Finding("TST002", "same everywhere", FLEET_YAML, "$.name", "fix it")


def prod_only(ctx: Context) -> Iterable[Finding]:
    """A finding in prod alone."""
    if ctx.view.env == "prod":
        yield Finding("TST003", "prod", FLEET_YAML, hint="in prod")


def base_and_staging(ctx: Context) -> Iterable[Finding]:
    """A warning in the base layer and in staging."""
    if ctx.view.env in ("", "staging"):
        yield Finding("TST004", "not prod", FLEET_YAML, severity=Severity.WARNING)


# ---- Check -----------------------------------------------------------------------------------


def test_a_check_calls_its_function_with_the_views_context(loaded: Values) -> None:
    chk = Check("TST001", "names the layer", layer_name)
    assert list(chk(context(loaded.envs["prod"]))) == [Finding("TST001", "layer prod", FLEET_YAML)]
    assert list(chk(context(loaded.base))) == [Finding("TST001", "layer base", FLEET_YAML)]
    assert (chk.severity, Check("X", "y", layer_name, "warning").severity) == ("error", "warning")


# ---- run_checks ------------------------------------------------------------------------------


def test_run_checks_runs_every_check_on_the_base_layer_and_every_environment(
    loaded: Values,
) -> None:
    """Findings that differ per layer name their layer; one found everywhere names none; one
    found in some layers names those (the base layer as "")."""
    checks = (Check(f.__name__, "x", f) for f in (layer_name, everywhere, base_and_staging))
    got = sorted(
        run_checks(loaded, build_values(loaded), checks), key=lambda f: (f.code, f.message)
    )
    assert got == [
        Finding("TST001", "layer base", FLEET_YAML, envs=("",)),
        Finding("TST001", "layer prod", FLEET_YAML, envs=("prod",)),
        Finding("TST001", "layer staging", FLEET_YAML, envs=("staging",)),
        Finding("TST002", "same everywhere", FLEET_YAML, "$.name", "fix it"),
        Finding("TST004", "not prod", FLEET_YAML, severity=Severity.WARNING, envs=("", "staging")),
    ]


def test_a_finding_of_one_environment_names_it(loaded: Values) -> None:
    got = run_checks(loaded, build_values(loaded), [Check("TST003", "x", prod_only)])
    assert got == [Finding("TST003", "prod", FLEET_YAML, hint="in prod", envs=("prod",))]
    assert [f.format() for f in got] == [
        "values/fleet.yaml:1:1: TST003 prod in environment 'prod'; in prod"
    ]


def test_no_checks_find_nothing(loaded: Values) -> None:
    assert run_checks(loaded, build_values(loaded), []) == []


# ---- ManifestRule and run_rules --------------------------------------------------------------

UNIT = Unit("prod", "team-ml", "overlays/prod/team-ml", (), {})
OBJS: list[Obj] = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"}},
]


def what_it_got(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    """One finding naming the layer, the unit and the objects the rule was given."""
    names = ", ".join(o["metadata"]["name"] for o in objs)
    yield Finding("TST005", f"{ctx.view.env}: {unit.name} ({unit.env}): {names}", FLEET_YAML)


def two_findings(ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
    yield Finding("TST006", "first", FLEET_YAML)
    yield Finding("TST006", "second", FLEET_YAML, severity=Severity.WARNING)


def test_a_manifest_rule_calls_its_function_with_view_unit_and_objects(loaded: Values) -> None:
    rule = ManifestRule("TST005", "names what it got", what_it_got)
    assert list(rule(context(loaded.envs["prod"]), UNIT, OBJS)) == [
        Finding("TST005", "prod: team-ml (prod): a, b", FLEET_YAML)
    ]
    assert rule.severity == "error"


def test_run_rules_runs_every_rule_and_names_the_unit(loaded: Values) -> None:
    rules = [ManifestRule("TST005", "x", what_it_got), ManifestRule("TST006", "y", two_findings)]
    got = run_rules(context(loaded.envs["prod"]), UNIT, OBJS, rules)
    assert got == [
        Finding("TST005", "prod: team-ml (prod): a, b", FLEET_YAML, unit="overlays/prod/team-ml"),
        Finding("TST006", "first", FLEET_YAML, unit="overlays/prod/team-ml"),
        Finding(
            "TST006",
            "second",
            FLEET_YAML,
            severity=Severity.WARNING,
            unit="overlays/prod/team-ml",
        ),
    ]
