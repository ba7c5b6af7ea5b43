"""What a check and a manifest rule are, and how a list of them runs.

A values check takes one layer's resolved values (the base, or one environment) and yields
findings; a manifest rule takes an environment's values and one unit's objects as kustomize built
them. Both are plain data: each module lists its own in CHECKS (or RULES), each function with its
code and summary, and `policy/registry.py` lists the modules, so importing a module never changes
what runs. The functions carry no decorator on purpose: mutmut (`make mutation`) does not mutate a
decorated function (source: boxed/mutmut, mutmut/mutation/file_mutation.py, 3.8.1: only
@staticmethod and @classmethod are mutated), so a rule registered by decorator would never be
mutation-tested.

A check reads its view's `Context` (policy/context.py): the view, its build, and what several
checks derive from it once. What the build holds is made from the view alone, so the memo
(`policy/memo.py`) keeps a view's findings by a digest of the view, the code and the facts it
salts with: a check that read anything else would be answered from a stale entry.

Checks run on the base layer and on every environment; identical findings of several layers are
reported once, naming the environments they apply to in `Finding.envs` (`findings.merge_layers`),
so a warning in one layer never hides an error in another.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from generator.builders.fleet import Build
from generator.findings import Finding, merge_layers
from generator.policy.context import Context
from generator.policy.memo import CheckMemo
from generator.values.model import Team, Values
from generator.vocab.objects import Obj
from generator.vocab.units import Unit

CheckFn = Callable[[Context], Iterable[Finding]]
RuleFn = Callable[[Context, Unit, list[Obj]], Iterable[Finding]]

# What a code's findings can be: "error", "warning", or "error or warning" (decided by values).
ERROR, WARNING, EITHER = "error", "warning", "error or warning"

# What of its view a check reads, which is what the memo keeps its findings by
# (policy/memo.py): the whole view (the default: a check that compares or sums teams); each team
# on its own (its findings are the union over the view's teams of what it finds in one team and
# the view's data that is not a team's: one team's edit runs it on that team alone); or no team
# at all (a team's edit does not run it). tests/policy/test_check_scope.py holds every check to
# what it says on the fixtures' fleets.
WHOLE, PER_TEAM, NO_TEAM = "the whole view", "each team on its own", "no team"


@dataclass(frozen=True)
class Check:
    """A check on one layer's resolved values."""

    code: str
    summary: str
    fn: CheckFn
    severity: str = ERROR
    scope: str = WHOLE

    def __call__(self, ctx: Context) -> Iterable[Finding]:
        return self.fn(ctx)


@dataclass(frozen=True)
class ManifestRule:
    """A rule on one unit's objects as kustomize builds them."""

    code: str
    summary: str
    fn: RuleFn
    severity: str = ERROR

    def __call__(self, ctx: Context, unit: Unit, objs: list[Obj]) -> Iterable[Finding]:
        return self.fn(ctx, unit, objs)


def run_checks(
    values: Values,
    builds: dict[str, Build],
    checks: Iterable[Check],
    memo: CheckMemo | None = None,
) -> list[Finding]:
    """Every check on the base layer and on each cluster (`builds`: each one's build, by layer
    key), identical findings merged. With a `memo`, what it knows is not checked again: a view
    whose digest it knows, a team whose digest and view's data but teams it knows (policy/
    memo.py)."""
    chosen = list(checks)
    memo = memo if memo is not None else CheckMemo(None, write=False)
    layers = [
        (view.key, memo.findings(view, _Layer(Context(builds[view.key]), chosen)))
        for view in (values.base, *values.envs.values())
    ]
    memo.save()
    return merge_layers(layers, values.envs)


class _Layer:
    """One view's checks split by their scope (memo.Scoped)."""

    def __init__(self, ctx: Context, checks: list[Check]) -> None:
        self.ctx = ctx
        self.parts = {s: [c for c in checks if c.scope == s] for s in (WHOLE, NO_TEAM, PER_TEAM)}
        self.whole_codes, self.rest_codes, self.team_codes = (
            [c.code for c in self.parts[s]] for s in (WHOLE, NO_TEAM, PER_TEAM)
        )

    def whole(self) -> list[Finding]:
        return [f for chk in self.parts[WHOLE] for f in chk(self.ctx)]

    def no_team(self) -> list[Finding]:
        ctx = self.ctx.of_teams(())
        return [f for chk in self.parts[NO_TEAM] for f in chk(ctx)]

    def team(self, team: Team) -> list[Finding]:
        ctx = self.ctx.of_teams((team,))
        return [f for chk in self.parts[PER_TEAM] for f in chk(ctx)]


def run_rules(
    ctx: Context, unit: Unit, objs: list[Obj], rules: Sequence[ManifestRule]
) -> list[Finding]:
    """Every rule on one unit's built objects; each finding names the unit. The context's
    `queues_asked` are then the queue names these rules looked up (Context.reads_alone)."""
    ctx.queues_asked.clear()
    return [f.at_unit(unit.path) for rule in rules for f in rule(ctx, unit, objs)]
