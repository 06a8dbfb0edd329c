"""What a transport can say about the batch scheduler its commands run under, for launches across nodes.

A tool that starts processes on many nodes (MPI: nccl-tests across nodes) launches them the
scheduler's way where there is one: under Slurm, ``srun --mpi=pmix`` inside the job, or mpirun
told the job it runs in.  The transport says only that it runs inside a job and which (the probe
builds the command lines): it knows nothing of the tools, and a tool knows nothing of how the
transport reaches the node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["Scheduled", "SchedulerJob", "scheduler_job"]


@dataclass(frozen=True)
class SchedulerJob:
    """The job a node's commands run in."""

    scheduler: str  #: "slurm"
    job_id: str
    #: the MPI plugin launches across nodes use (srun --mpi=...): auto, a plugin name, or none (mpirun)
    mpi: str = "auto"


@runtime_checkable
class Scheduled(Protocol):
    """A transport whose commands run inside a scheduler's job (the Slurm transport)."""

    def scheduler_job(self) -> SchedulerJob | None:
        """The job, once it is had (None: not inside one, or it could not be had)."""
        ...


def scheduler_job(transport: object) -> SchedulerJob | None:
    """The job ``transport`` runs its commands in, if it says so."""
    return transport.scheduler_job() if isinstance(transport, Scheduled) else None
