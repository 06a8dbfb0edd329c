"""The checks a run of the installed plugin declares: the built-in table and every check family the
plugin loads (``pytest_fabric.checks.<family>``, each declaring its own through ``pytest_fabric_checks``),
and the profile schema they make. Unit tests read bundled profiles and conformance tests through it."""

from __future__ import annotations

import importlib

from pytest_fabric import plugin
from pytest_fabric.checks import base as checks
from pytest_fabric.config.profile import ProfileSchema, profile_schema


def bundled_registry() -> checks.CheckRegistry:
    """The registry a run assembles from pytest-fabric's own plugins (no extension)."""
    families = [m for m in plugin.pytest_plugins if m.startswith("pytest_fabric.checks.")]
    answers = [("builtin", list(checks.CHECKS.values()))]
    answers += [(m, list(importlib.import_module(m).pytest_fabric_checks(None))) for m in families]
    return checks.CheckRegistry.assemble(answers)


def bundled_schema() -> ProfileSchema:
    """The profile schema of :func:`bundled_registry`: what ``--profile`` accepts without an extension."""
    return profile_schema(bundled_registry().settings_models())
