"""render and validate run with Python's cycle collector paused, and give it back after."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from generator.builders import fleet as builders
from generator.render import gcpause
from generator.render.stage import RenderOptions, render
from generator.validate.run import ValidateOptions, validate
from generator.values.model import FleetView
from generator.vocab.units import Component
from tests.fixtures import tree


def test_paused_restores_the_callers_setting_even_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gcpause.paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()  # a caller that had it off keeps it off
    finally:
        gc.enable()


def test_what_a_paused_block_made_is_frozen_until_the_next_block() -> None:
    """The collector does not walk a run's objects as soon as it is back (young objects: none
    counted), and the next run gives them back to it (the oldest generation)."""
    gc.collect()
    with gcpause.paused():
        made = [[i] for i in range(50_000)]  # tracked containers
        assert gc.get_count()[0] > 50_000
    try:
        assert gc.get_count()[0] < 100 and gc.get_freeze_count() > 50_000
        with gcpause.paused():
            assert gc.get_freeze_count() == 0
            assert any(o is made for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()
    assert len(made) == 50_000


def test_render_and_validate_build_with_the_collector_paused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    values_dir = tree(tmp_path)  # any fleet: the builders only need to run
    seen: list[bool] = []

    def spy(view: FleetView) -> list[Component]:
        seen.append(gc.isenabled())
        return []

    monkeypatch.setattr(builders, "BUILDERS", (*builders.BUILDERS, builders.of_view(spy)))
    render(RenderOptions(values_dir, values_dir.parent))
    assert seen and not any(seen) and gc.isenabled()
    seen.clear()
    validate(ValidateOptions(values_dir, drift=False))
    assert seen and not any(seen) and gc.isenabled()
