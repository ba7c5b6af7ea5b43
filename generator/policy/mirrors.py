"""Mirrors of the registries and chart repositories the fleet installs from (code MIR;
docs/values.md, "Mirrors"; builders/mirrors.py applies them).

A registry mirror is an image name's start: a registry host (with a port, if any) and optionally
a path in it, as github.com/distribution/reference v0.6.0 regexp.go spells a name (domain
components, then lower-case path components). The first part must read as a host: a name whose
first part has no "." or ":" and is not "localhost" is a Docker Hub repository
(normalize.go splitDockerDomain), so "mirror/k8s" would pull from docker.io/mirror/k8s. A chart
repository is an http(s) URL, or an OCI registry path as Argo CD names a Helm OCI repository:
without "oci://" (argo-cd v3.5.7 docs/user-guide/helm.md; vocab/addons.py cites it per chart).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from generator.builders import mirrors, platform
from generator.findings import Finding, Severity, did_you_mean
from generator.policy.checks import NO_TEAM, WARNING, Check
from generator.policy.context import Context
from generator.values.schema import matches
from generator.values.yamlio import json_path
from generator.vocab import addons

_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*"
# distribution/reference: domainAndPort, then "/"-separated path components.
REGISTRY_PATH = (
    rf"^(?:{_HOST_PART}(?:\.{_HOST_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?(?:/{_PATH_PART})*$"
)
CHART_URL = r"^https?://[^\s/?#]+(?:/[^\s?#]*)?$"
EXAMPLE = "e.g. registry.k8s.io, or mirror.example.cn/k8s"


def registry_problem(text: str) -> str:
    """Why `text` is not a registry host with an optional path; "" when it is one."""
    host = text.split("/", 1)[0]
    if "://" in text:
        return "has a scheme: a registry is named without one"
    if not matches(REGISTRY_PATH, text):
        return (
            "is not a registry host and path (a host of letters, digits, '-' and '.', an "
            "optional :port, then lower-case path parts separated by '/')"
        )
    if not ("." in host or ":" in host or host == "localhost"):
        return (
            f"starts with {host!r}, which is no host (no '.' or ':', not localhost): an image "
            f"named so is pulled from Docker Hub, docker.io/{text}"
        )
    return ""


def chart_repo_problem(text: str) -> str:
    """Why `text` is not a chart repository as Argo CD names one; "" when it is one."""
    if text.startswith("oci://"):
        return (
            "starts with oci://, which Argo CD's Helm source does not take: it names an OCI "
            "repository by its registry path"
        )
    if "://" in text:
        return "" if matches(CHART_URL, text) else "is not an http(s) URL with a host"
    problem = registry_problem(text)
    return f"is neither an http(s) URL nor an OCI registry path: it {problem}" if problem else ""


def _invalid(
    ctx: Context,
    section: str,
    code: str,
    words: tuple[str, str],
    problem_of: Callable[[str], str],
    hint: str,
) -> Iterable[Finding]:
    """`code` for each key or mirror of fleet.mirrors.<section> that `problem_of` refuses, at
    its own line; `words`: what the map is called, and what its key is."""
    doc = ctx.view.fleet.doc
    for key, value in getattr(ctx.view.fleet.mirrors, section):
        path = ("mirrors", section, key)
        for what, text, loc in (
            (words[1], key, doc.locate(path, key=True)),
            ("mirror", value, doc.locate(path)),
        ):
            problem = problem_of(text)
            if problem:
                yield Finding(
                    code,
                    f"{words[0]} {key!r}: the {what} {text!r} {problem}",
                    loc,
                    json_path(path),
                    hint,
                )


def invalid_registry_mirrors(ctx: Context) -> Iterable[Finding]:
    return _invalid(
        ctx,
        "registries",
        "MIR001",
        ("registry mirror", "registry"),
        registry_problem,
        f"write a registry host and optional path, without a scheme ({EXAMPLE})",
    )


def invalid_chart_mirrors(ctx: Context) -> Iterable[Finding]:
    return _invalid(
        ctx,
        "charts",
        "MIR002",
        ("chart repository mirror", "repository"),
        chart_repo_problem,
        "write an http(s) URL (https://charts.example.cn/nvidia) or an OCI registry "
        "path without oci:// (mirror.example.cn/charts)",
    )


def unknown_chart_repos(ctx: Context) -> Iterable[Finding]:
    """A chart mirror whose repository no add-on installs from mirrors nothing: a typo (a
    trailing '/') would leave the add-on pulling from the unreachable repository."""
    known = {a.chart.repo_url for a in addons.ADDONS if a.chart is not None}
    doc = ctx.view.fleet.doc
    for key, _ in ctx.view.fleet.mirrors.charts:
        if key in known or chart_repo_problem(key):
            continue
        path = ("mirrors", "charts", key)
        yield Finding(
            "MIR004",
            f"chart repository mirror {key!r}: no add-on installs its chart from {key!r}, so "
            "this mirror is never used",
            doc.locate(path, key=True),
            json_path(path),
            did_you_mean(
                key, known, "the add-ons' chart repositories: " + ", ".join(sorted(known))
            ),
            severity=Severity.WARNING,
        )


def clashing_images(ctx: Context) -> Iterable[Finding]:
    """Images of one chart whose mirrors need different values in one field they share (Volcano's
    components share `basic.image_registry`): the chart can pull only one of them from its
    mirror."""
    view = ctx.view
    for addon in platform.rendered(view):
        assert addon.chart is not None  # rendered() yields add-ons with a chart
        for field, values in mirrors.chart_images(view.fleet.mirrors, addon.chart).clashes:
            yield Finding(
                "MIR003",
                f"the mirrors give {addon.title}'s images different values of "
                f"{'.'.join(field)}, one value its chart shares between them: "
                f"{', '.join(repr(v) for v in values)}",
                view.fleet.doc.locate(("mirrors", "registries")),
                "$.mirrors.registries",
                f"mirror {addon.title}'s images under one registry host (one mirror for the "
                "registry they come from)",
            )


CHECKS: tuple[Check, ...] = (
    Check(
        "MIR001",
        "a registry mirror, or the registry it mirrors, is not a registry host and path",
        invalid_registry_mirrors,
        scope=NO_TEAM,
    ),
    Check(
        "MIR002",
        "a chart repository mirror, or the repository it mirrors, is not an http(s) URL or an "
        "OCI registry path",
        invalid_chart_mirrors,
        scope=NO_TEAM,
    ),
    Check(
        "MIR003",
        "mirrors give images of one chart different values of a field the chart shares",
        clashing_images,
        scope=NO_TEAM,
    ),
    Check(
        "MIR004",
        "a chart repository mirror names a repository no add-on installs from",
        unknown_chart_repos,
        WARNING,
        scope=NO_TEAM,
    ),
)
