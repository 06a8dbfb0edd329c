"""The checks pytest-fabric ships, assembled as a run without extensions assembles them.

A run's registry comes from every plugin's ``pytest_fabric_checks`` answer (plugin.py): one answer per
family module, each a plugin of its own, and an extension's.  What reads profiles or declarations
without a run (benchmarks, tools, tests) reads the same here: the registry of every family
(:data:`FAMILIES`, the family modules plugin.py registers), the profile schema their settings models
make, and a profile loaded by that schema.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

from pytest_fabric.checks import (
    attribution,
    egress,
    gpu,
    gpu_load,
    link_history,
    links,
    nccl,
    pcie_errors,
    rdma,
    software,
    storage,
    tcp,
    xid,
)
from pytest_fabric.checks.base import Check, CheckRegistry
from pytest_fabric.config.profile import Profile, ProfileSchema, profile_schema
from pytest_fabric.config.profile import load_profile as load_with

__all__ = ["FAMILIES", "builtin_registry", "builtin_schema", "load_profile"]

#: the family modules pytest-fabric registers as plugins (plugin.py's ``pytest_plugins``), in that order
FAMILIES: tuple[ModuleType, ...] = (gpu, rdma, software, attribution, xid, pcie_errors, link_history, gpu_load, storage,
                                    egress, tcp, nccl, links)


def _declared(family: ModuleType) -> list[Check[Any]]:
    # a family's answer reads nothing of the run's config: the same declarations in every run
    return list(family.pytest_fabric_checks(None))


@cache
def builtin_registry() -> CheckRegistry:
    """The registry a run assembles from pytest-fabric's own plugins (no extension)."""
    return CheckRegistry.assemble([(family.__name__, _declared(family)) for family in FAMILIES])


@cache
def builtin_schema() -> ProfileSchema:
    """The profile schema of :func:`builtin_registry`: what ``--profile`` accepts without an extension."""
    registry = builtin_registry()
    return profile_schema(registry.settings_models(), registry.ceilings(), registry.blame_inputs())


def load_profile(reference: str, overrides: list[str] | None = None, schema: ProfileSchema | None = None) -> Profile:
    """A bundled profile by name, or a profile file, as a run without extensions loads it
    (:func:`pytest_fabric.config.profile.load_profile` with :func:`builtin_schema`, unless ``schema``)."""
    return load_with(reference, overrides, schema or builtin_schema())
