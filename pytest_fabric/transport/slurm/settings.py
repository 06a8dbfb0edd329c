"""The inventory's ``slurm:`` section: run every node's commands as steps of a Slurm allocation.

Three ways to write it::

    slurm: {partition: gpu, account: proj42, nodes: "gpu[001-128]"}   # ask for an allocation
    slurm: {partition: gpu}          # with a nodes: list (hosts, data addresses, labels)
    slurm: {allocation: current}     # the job this run is inside (--cluster slurm)

With ``allocation: current`` the nodes and the job come from ``SLURM_JOB_NODELIST`` and
``SLURM_JOB_ID`` (salloc and sbatch set them); otherwise the run asks for an allocation over the
nodes (salloc, with the partition and account given) and cancels it when it ends.

The section becomes :class:`SlurmSettings`, the plain settings the Slurm transport runs with.
They are defined here, not beside the transport, so that loading an inventory never imports the
code that runs srun and salloc.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_fabric.transport.gather import DEFAULT_WINDOW_S

__all__ = ["NoAllocationError", "SlurmSection", "SlurmSettings", "current_allocation", "settings_from"]

_WORD_RE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
# One srun/salloc option as a list item: --gres=gpu:8, --qos=high, --mpi=pmix, -C h100.
_OPTION_RE = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9-]*(?:=[A-Za-z0-9_.:,/@+%=-]+)?$|^[A-Za-z0-9_.:,/@+%=-]+$")


@dataclass(frozen=True)
class SlurmSettings:
    """How to get and use an allocation; from the inventory's ``slurm:`` section."""

    #: the job to run in (``--cluster slurm``: SLURM_JOB_ID); None: ask for one
    job_id: str | None = None
    partition: str | None = None
    account: str | None = None
    #: the allocation's time limit, minutes (salloc --time); None: the run's plan with a margin
    time_limit_min: int | None = None
    #: how long to wait for the allocation to be granted (salloc --immediate), seconds
    wait_s: int = 300
    #: extra salloc options (``--gres=gpu:8``, ``--qos=...``)
    salloc_options: tuple[str, ...] = ()
    #: extra srun options for every step (``--gres=gpu:8``, ``--mpi=pmix``)
    srun_options: tuple[str, ...] = ()
    #: where steps start (srun --chdir); every node has it
    chdir: str = "/tmp"
    #: how long the first call of a wave waits for the others to share its step (``per-command`` only)
    gather_window_s: float = DEFAULT_WINDOW_S
    #: ``agent``: one long-lived step per node runs every command (see .agent); ``per-command``:
    #: every command (a wave's: every command of the wave) is a step of its own, for nodes without python3
    steps: Literal["agent", "per-command"] = "agent"
    #: how the allocation asks for GPUs (see .gpus): auto, gpus-per-node, gres or none
    gpu_request: Literal["auto", "gpus-per-node", "gres", "none"] = "auto"
    #: GPUs per node the allocation asks for: the profile's gpu_count (None: none)
    gpus_per_node: int | None = None
    #: srun's MPI plugin for launches across nodes (srun --mpi=...): auto (pmix where srun lists it),
    #: a plugin name, or none (mpirun inside the allocation)
    mpi: str = "auto"


class NoAllocationError(ValueError):
    """``allocation: current`` outside an allocation."""


class SlurmSection(BaseModel):
    """What a user writes under ``slurm:``."""

    model_config = ConfigDict(extra="forbid")

    partition: str | None = None
    account: str | None = None
    nodes: str | None = None  # a nodeset, as sinfo prints it: gpu[001-128]
    allocation: Literal["current", "new"] = "new"
    # the allocation's time limit, minutes; unset: the run's plan with a margin (allocation_minutes)
    time: int | None = Field(default=None, ge=1, le=100_000)
    wait: int = Field(default=300, ge=0, le=86_400)  # seconds to wait for the allocation
    salloc_options: list[str] = Field(default_factory=list)
    srun_options: list[str] = Field(default_factory=list)
    chdir: str = "/tmp"
    # agent: one step per node for the whole run; per-command: a step per command (nodes without python3)
    steps: Literal["agent", "per-command"] = "agent"
    # how the allocation asks for the profile's GPUs: auto (from sinfo and SelectType), gpus-per-node, gres, none
    gpus: Literal["auto", "gpus-per-node", "gres", "none"] = "auto"
    # srun --mpi for NCCL across nodes: auto (pmix where srun --mpi=list has it), pmix_v4 ..., none (mpirun)
    mpi: str = "auto"

    @field_validator("partition", "account")
    @classmethod
    def _word(cls, value: str | None) -> str | None:
        if value is not None and not _WORD_RE.match(value):
            raise ValueError(f"{value!r} is not a Slurm partition or account name")
        return value

    @field_validator("salloc_options", "srun_options")
    @classmethod
    def _options(cls, value: list[str]) -> list[str]:
        for option in value:
            if not _OPTION_RE.match(option):
                raise ValueError(f"{option!r}: write one option per item, e.g. [--gres=gpu:8, --qos=high]")
        return value

    @field_validator("mpi")
    @classmethod
    def _mpi(cls, value: str) -> str:
        if not re.match(r"^[a-z][a-z0-9_]{0,31}$", value):
            raise ValueError(f"{value!r}: auto, none, or an MPI plugin srun --mpi=list names (pmix, pmix_v4)")
        return value

    @field_validator("chdir")
    @classmethod
    def _chdir(cls, value: str) -> str:
        if not value.startswith("/") or not re.match(r"^[A-Za-z0-9._/@+~=,-]+$", value):
            raise ValueError(f"{value!r}: an absolute path every node has")
        return value


def current_allocation(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(job id, nodelist) of the allocation this process runs in; NoAllocationError outside one."""
    env = os.environ if env is None else env
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    nodes = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not job or not nodes:
        raise NoAllocationError(
            "no Slurm allocation: SLURM_JOB_ID and SLURM_JOB_NODELIST are not set; run inside one "
            "(salloc -N 4 pytest --cluster slurm ..., or from an sbatch script), or write an inventory "
            "with slurm: {partition: ..., nodes: ...} to have the run ask for one"
        )
    return job, nodes


#: the margin an allocation gets over the run's plan: the plan is an estimate, and a run cut at the
#: time limit loses its last checks (error counters run last)
PLAN_MARGIN = 1.5
PLAN_MARGIN_MIN = 10


def allocation_minutes(plan_s: float) -> int:
    """The allocation a run of this plan asks for: the plan x 1.5 plus 10 minutes, whole minutes."""
    return max(PLAN_MARGIN_MIN, math.ceil(plan_s * PLAN_MARGIN / 60) + PLAN_MARGIN_MIN)


def settings_from(section: SlurmSection, job_id: str | None) -> SlurmSettings:
    """The transport's settings for a ``slurm:`` section (``job_id``: the allocation to use, if any)."""
    return SlurmSettings(
        job_id=job_id,
        partition=section.partition,
        account=section.account,
        time_limit_min=section.time,
        wait_s=section.wait,
        salloc_options=tuple(section.salloc_options),
        srun_options=tuple(section.srun_options),
        chdir=section.chdir,
        steps=section.steps,
        gpu_request=section.gpus,
        mpi=section.mpi,
    )
