"""What slurmctld says it did: sdiag's RPC counts (``REQUEST_JOB_STEP_CREATE``: a step asked for)."""

from __future__ import annotations

import re

from .slurm import SlurmSim

__all__ = ["STEPS_CHECKS", "step_creations"]

#: the checks of tests/data/profiles/sim-slurm-steps.yaml, as pytest -k selects them (no outliers)
STEPS_CHECKS = "mtu or (tcp_throughput and not outlier) or sequential_write"

_STEP_CREATE = re.compile(r"REQUEST_JOB_STEP_CREATE\s+\(\s*\d+\)\s+count:\s*(\d+)")


def step_creations(slurm: SlurmSim) -> int:
    """How many steps slurmctld has been asked to create since it started (or since ``sdiag -r``)."""
    found = _STEP_CREATE.search(slurm.run(["sdiag"]).stdout)
    return int(found.group(1)) if found else 0  # none yet: sdiag leaves the line out
