"""Reach nodes through Slurm: every command is a job step (``srun``) inside one allocation.

- :mod:`.settings`: the inventory's ``slurm:`` section and the :class:`SlurmSettings` made from
  it; plain data, imported by the inventory, importing nothing that runs a command;
- :mod:`.transport`: :class:`SlurmAllocation` and :class:`SlurmTransport`, which run srun,
  salloc and scancel;
- :mod:`.session`: the run's one allocation, shared by every Slurm node
  (``pytest_fabric_make_transport`` asks it for a node's transport);
- :mod:`.drain`: the ``scontrol update ... state=drain`` lines for failed nodes (a plugin:
  ``--slurm-drain``).

Only the first two are re-exported here.  The session and the drain plugin import the inventory
and the run's state, which import the settings from this package: importing them here would be a
cycle.  Import them as ``pytest_fabric.transport.slurm.session`` and ``...slurm.drain``.
"""

from __future__ import annotations

from pytest_fabric.transport.slurm.settings import (
    NoAllocationError,
    SlurmSection,
    SlurmSettings,
    current_allocation,
    settings_from,
)
from pytest_fabric.transport.slurm.transport import (
    NoAllocation,
    NodeNotAvailable,
    SlurmAllocation,
    SlurmStep,
    SlurmTransport,
    classify_srun_failure,
    split_step_output,
)

__all__ = [
    "NoAllocation",
    "NoAllocationError",
    "NodeNotAvailable",
    "SlurmAllocation",
    "SlurmSection",
    "SlurmSettings",
    "SlurmStep",
    "SlurmTransport",
    "classify_srun_failure",
    "current_allocation",
    "settings_from",
    "split_step_output",
]
