"""Warnings about how pytest-fabric is used: the run goes on, but probably does not measure what was meant."""

from __future__ import annotations

__all__ = ["FabricUsageWarning"]


class FabricUsageWarning(UserWarning):
    """A profile or inventory value that runs but is likely a mistake (shown in pytest's warnings summary).

    Turn it into an error with ``-W error::pytest_fabric.session.usage.FabricUsageWarning``.
    """
