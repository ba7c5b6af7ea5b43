"""Every values check held to the scope it declares (policy/checks.py), wherever a test runs it.

tests/conftest.py puts `Verified` in place of the views' check runner for every test: before a
view's checks run, each check scoped PER_TEAM runs on the whole view and on each team alone,
and each check scoped NO_TEAM on the whole view and on the view without teams, and the findings
must be the same. The memo keeps those checks' findings by team, or by the view without teams
(policy/memo.py): a check that read more than it declares would be answered from a stale entry.
Each code fires in some test (tests/policy/test_registry.py), so each is held to its scope on
a tree where it finds something.
"""

from __future__ import annotations

from typing import Any

from generator.findings import Finding
from generator.policy import checks
from generator.policy.checks import NO_TEAM, PER_TEAM, Check
from generator.policy.context import Context
from generator.policy.memo import row_of_finding as _row


class ScopeError(AssertionError):
    """A check found something else on the parts of a view than on the whole view."""


def _rows(found: list[Finding]) -> list[tuple[Any, ...]]:
    return sorted(map(_row, found), key=repr)


def verify(ctx: Context, chosen: list[Check]) -> None:
    """ScopeError when a check of `chosen` finds on `ctx`'s view something else than on the
    parts its scope says it reads."""
    teams = ctx.view.teams
    for chk in chosen:
        if chk.scope == PER_TEAM:
            parts = [f for team in teams for f in chk(ctx.of_teams((team,)))]
        elif chk.scope == NO_TEAM:
            parts = list(chk(ctx.of_teams(())))
        else:
            continue
        whole = _rows(list(chk(ctx)))
        if _rows(parts) != whole:
            raise ScopeError(
                f"{chk.code} is scoped {chk.scope!r} but finds on view {ctx.view.key!r} "
                f"{whole} whole and {_rows(parts)} in parts"
            )


class Verified(checks._Layer):
    """The views' check runner, each view's checks held to their scopes first."""

    def __init__(self, ctx: Context, chosen: list[Check]) -> None:
        verify(ctx, chosen)
        super().__init__(ctx, chosen)
