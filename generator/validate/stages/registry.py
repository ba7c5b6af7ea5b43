"""Every validate stage, in the order they run: the build stage first (the others read the
objects it built), then each upstream tool. A new stage is a module in this folder with a
`STAGE` and one line here; a test holds that every stage module is listed, in `order`."""

from __future__ import annotations

from generator.validate.stages import (
    Stage,
    charts,
    kubescheduler,
    kueue,
    kustomize,
    nfd,
    promtool,
    workloads,
)

STAGES: tuple[Stage, ...] = (
    kustomize.STAGE,
    promtool.STAGE,
    charts.STAGE,
    nfd.STAGE,
    kueue.STAGE,
    workloads.STAGE,
    kubescheduler.STAGE,
)
