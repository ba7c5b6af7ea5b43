"""The simulation's text report names what it simulated: an environment, or one cluster of it."""

from __future__ import annotations

from generator.reporters.simulation import env_text
from generator.simulate.result import EnvReport


def test_the_report_names_the_environment_and_its_cluster() -> None:
    assert env_text(EnvReport("prod/domestic")).splitlines()[0] == (
        "environment prod, cluster domestic"
    )
    assert env_text(EnvReport("staging")).splitlines()[0] == "environment staging"
