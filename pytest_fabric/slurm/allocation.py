"""The run's Slurm allocation: made on first use, shared by every Slurm node, released at the end.

Part of the Slurm integration (``slurm/``, above the transport it uses and the run's state it
reads): ``pytest_fabric_make_transport`` asks here for a node written ``transport: slurm`` (or
under a ``slurm:`` section).  All such nodes share one :class:`~.transport.SlurmAllocation`, kept
in ``config.stash``; the allocation is released (the job cancelled if the run asked for it,
else this run's steps) when pytest unconfigures, after every transport has closed.
"""

from __future__ import annotations

import dataclasses
import threading

import pytest

from pytest_fabric.checks.base import CheckRegistry
from pytest_fabric.config.inventory import Node
from pytest_fabric.config.profile import Count, Profile
from pytest_fabric.record.runinfo import get_run_info
from pytest_fabric.report.progress import PLAN_KEY
from pytest_fabric.run.state import get_state
from pytest_fabric.transport.slurm.settings import SlurmSettings, allocation_minutes
from pytest_fabric.transport.slurm.transport import SlurmAllocation, SlurmTransport

__all__ = ["ALLOCATION_KEY", "record_job", "slurm_transport"]

ALLOCATION_KEY = pytest.StashKey[SlurmAllocation]()


# The pool makes the nodes' transports in parallel threads: without it two of them could each make
# an allocation, and the second salloc would queue behind the first for nodes it never gets.
_LOCK = threading.Lock()


def allocation_for(config: pytest.Config) -> SlurmAllocation:
    """The run's allocation over the inventory's Slurm nodes (not yet asked for: that is on first use)."""
    with _LOCK:
        return _allocation_for(config)


def _allocation_for(config: pytest.Config) -> SlurmAllocation:
    allocation = config.stash.get(ALLOCATION_KEY, None)
    if allocation is None:
        state = get_state(config)
        assert state is not None
        nodes = [n.name for n in state.inventory.nodes if n.transport == "slurm"]
        settings = state.inventory.slurm or SlurmSettings()
        # The GPUs the profile expects on each node: the allocation asks for them (see .gpus).
        settings = dataclasses.replace(settings, gpus_per_node=expected_gpus(state.profile, state.checks))
        if settings.time_limit_min is None:
            # Not written: as long as the run's plan may take (its bound: floors, the most retests), with
            # a margin (the default of 120 minutes was shorter than many plans, and a run cut at its time
            # limit loses its last checks).
            plan = config.stash.get(PLAN_KEY, None)
            # A --soak holds the allocation for its length and one more cycle.
            from pytest_fabric.session.soak import allocation_plan_s, soak_seconds

            planned = allocation_plan_s(plan.bound_s if plan is not None else None, soak_seconds(config))
            minutes = allocation_minutes(planned) if planned is not None else 120  # no plan: no terminal
            settings = dataclasses.replace(settings, time_limit_min=minutes)
        allocation = SlurmAllocation(nodes, settings)
        config.stash[ALLOCATION_KEY] = allocation
        config.add_cleanup(allocation.release)
    return allocation


def record_job(config: pytest.Config) -> None:
    """Name the run's Slurm job on the terminal and in the record (``run.slurm_job``), once it had one.

    A tenant matches the record to ``sacct -j JOB``; the allocation line says how the job was made
    (salloc's command and its answer) or which job the run was inside (squeue's line).
    """
    allocation = config.stash.get(ALLOCATION_KEY, None)
    info = get_run_info(config)
    if allocation is None or allocation.job_id is None or info is None:
        return
    line = allocation.allocation_line or f"SLURM_JOB_ID={allocation.job_id}"
    info.slurm_job = {"job_id": str(allocation.job_id), "allocation": line}
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(f"fabric: slurm job {allocation.job_id}: {line} (sacct -j {allocation.job_id} shows it)")


def expected_gpus(profile: Profile, registry: CheckRegistry) -> int | None:
    """The GPUs per node a profile expects (what the check of the run's ``registry`` that states a node's
    GPUs is set to: ``gpu_count``), None when it states none."""
    spec = registry.statement(profile, "gpus", Count)
    return spec.stated if spec is not None else None


def slurm_transport(node: Node, config: pytest.Config) -> SlurmTransport:
    """``node``'s transport: steps in the run's allocation."""
    return SlurmTransport(node.name, allocation_for(config))
