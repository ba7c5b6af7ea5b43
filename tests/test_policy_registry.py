"""The one policy registry: every rule has a code, a one-line summary and a test."""

from __future__ import annotations

import re

from generator import policy
from tests.conftest import ROOT


def all_rules() -> dict[str, str]:
    return {code: summary for code, (_, summary) in policy.all_rules().items()}


def test_codes_are_well_formed_and_summaries_one_line() -> None:
    for code, summary in all_rules().items():
        assert re.fullmatch(r"[A-Z]{2,4}[0-9]{3}", code), code
        assert summary and "\n" not in summary and len(summary) < 140, code


def test_every_rule_is_exercised_by_a_test() -> None:
    tests = "".join(
        p.read_text()
        for p in (ROOT / "tests").glob("test_*.py")
        if p.name != "test_policy_registry.py"
    )
    missing = [code for code in all_rules() if f'"{code}"' not in tests]
    assert missing == []


def test_every_rule_is_documented() -> None:
    docs = "".join(p.read_text() for p in (ROOT / "docs").glob("*.md"))
    missing = [code for code in all_rules() if code not in docs]
    assert missing == []


def test_docs_list_the_registry_as_it_is() -> None:
    assert policy.rules_table() in (ROOT / "docs" / "validate.md").read_text()
