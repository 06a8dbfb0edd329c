"""What a run is about: the cluster, the profile, the nodes, the versions.

Built by the plugin at configure time from the inventory and profile (on the
controller and on every xdist worker alike, since each loads the same files) and
kept in ``config.stash[RUN_INFO_KEY]``.  Reports read it from there.
"""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import pytest

__all__ = ["RunInfo", "RUN_INFO_KEY", "get_run_info", "utc_now"]


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class RunInfo:
    cluster_name: str
    inventory_path: str
    profile_name: str
    profile_path: str
    profile_sha256: str  # of the profile file(s) as loaded, extends chain included
    profile_extends: list[str]
    profile_description: str
    nodes: list[str]
    node_labels: dict[str, dict[str, str]]  # node -> labels (leaf, rack, rail, ...)
    overrides: list[str]  # --expect KEY=VALUE as given
    pytest_fabric_version: str
    #: ``layer.check`` for every check the profile sets: ACCEPT needs each of them to have run
    profile_checks: list[str] = field(default_factory=list)
    #: --host-key-policy: strict, accept-new or ignore
    host_key_policy: str = "strict"
    #: the SHA-256 of the inventory file as loaded
    inventory_sha256: str = ""
    #: the Slurm job the run ran in, once it has one: ``{"job_id": ..., "allocation": the line that made or named it}``
    slurm_job: dict[str, str] | None = None
    started: str = field(default_factory=utc_now)
    finished: str | None = None
    controller: str = field(default_factory=platform.node)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


RUN_INFO_KEY = pytest.StashKey[RunInfo]()


def get_run_info(config: pytest.Config) -> RunInfo | None:
    """The run's info, or None when pytest runs without ``--cluster``."""
    return config.stash.get(RUN_INFO_KEY, None)
