"""The checks a run of the installed plugin declares: every check family the plugin loads (``pytest_fabric.checks.<family>``, each declaring its own through ``pytest_fabric_checks``),
and the profile schema they make. Unit tests read bundled profiles and conformance tests through it
(pytest_fabric/checks/builtin.py assembles them; test_checks.py holds its families to plugin.py's)."""

from __future__ import annotations

from pytest_fabric.checks import base as checks
from pytest_fabric.checks.builtin import builtin_registry, builtin_schema
from pytest_fabric.config.profile import ProfileSchema


def bundled_registry() -> checks.CheckRegistry:
    """The registry a run assembles from pytest-fabric's own plugins (no extension)."""
    return builtin_registry()


def bundled_schema() -> ProfileSchema:
    """The profile schema of :func:`bundled_registry`: what ``--profile`` accepts without an extension."""
    return builtin_schema()
