"""Reach nodes through Slurm: every command is a job step (``srun``) inside one allocation.

- :mod:`.settings`: the inventory's ``slurm:`` section and the :class:`SlurmSettings` made from
  it; plain data, imported by the inventory, importing nothing that runs a command;
- :mod:`.transport`: :class:`SlurmAllocation` and :class:`SlurmTransport`, which run srun,
  salloc and scancel;
- :mod:`.gpus`: the GPUs an allocation asks for;
- :mod:`.agent`, :mod:`.agent_step`: the step that stays on each node and runs its commands.

Transport only: nothing here imports above transport/ (tests/unit/test_layering.py).  The run's
one allocation and the drain lines, which read the inventory, the profile, the run's state and
its records, are the Slurm integration in :mod:`pytest_fabric.slurm`.
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
