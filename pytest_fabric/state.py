"""The plugin's per-run state, kept in ``config.stash`` (never in module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from .batches import BatchCache
from .evidence import HostKeyLog
from .inventory import Inventory
from .pairs import Pair
from .probes.rounds import RoundCache
from .profile import Profile
from .subjects import DEVICE_TESTS_UP_TO
from .transport.ssh import JumpHosts
from .verdict import Verdict

if TYPE_CHECKING:
    from .cluster import Cluster

__all__ = ["FabricState", "STATE_KEY", "get_state", "CheckInfo", "CHECK_KEY", "VERDICTS_KEY"]


@dataclass
class FabricState:
    inventory: Inventory
    profile: Profile
    pairs: list[Pair]
    host_key_policy: str
    ssh_config: str | None = None
    #: above this many nodes one test per node and check judges all of a node's GPUs (ports)
    device_tests_up_to: int = DEVICE_TESTS_UP_TO
    cluster: Cluster | None = None
    #: pair ids selected for each check after -k/-m deselection: a round measures only these
    selected_pairs: dict[str, set[str]] = field(default_factory=dict)
    #: per measurement fixture, (subject fixture, parameter) of the selected tests using it, in
    #: run order: a wave measures these
    selected_subjects: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    #: waves of per-node checks (and, through them, anything measured as a batch)
    batches: BatchCache = field(default_factory=BatchCache)
    #: connections to jump hosts, shared by every node behind them
    jump_hosts: JumpHosts = field(default_factory=JumpHosts)
    #: which host keys the run's connections verified, accepted new or accepted although they differ
    host_keys: HostKeyLog = field(default_factory=HostKeyLog)
    #: per node: the RDMA ports it reports, listed once per run
    ports: dict[str, Any] = field(default_factory=dict)
    #: (node, device, port) -> error counters read before any traffic of this run
    #: (a probes.counters.PortCounters, or the exception that stopped the reading)
    counter_baseline: dict[tuple[str, str, int], Any] = field(default_factory=dict)
    #: results computed once per run for the whole cluster (attribution, scaling, ...)
    cluster_results: dict[str, Any] = field(default_factory=dict)

    def rounds_index(self) -> dict[int, list[Pair]]:
        """The scheduled pairs by round, in round order (built once: tests look up their round often)."""
        index: dict[int, list[Pair]] | None = self.cluster_results.get("rounds_index")
        if index is None:
            index = {}
            for pair in sorted(self.pairs, key=lambda p: p.round):
                index.setdefault(pair.round, []).append(pair)
            self.cluster_results["rounds_index"] = index
        return index

    @property
    def rounds(self) -> RoundCache:
        """Pair rounds: batches of the same cache as waves."""
        return RoundCache(self.batches)


@dataclass(frozen=True)
class CheckInfo:
    """What a conformance test item checks: known at collection, before it runs."""

    layer: str
    check: str
    subject: str
    nodes: tuple[str, ...]
    #: the subject fixture and its parameter (no fixture: a cluster check; no parameter: its
    #: parameter set was empty and the test skips)
    fixture: str | None = None
    param: Any = None
    #: the other fixtures the test uses (its measurements), one tuple shared by a test function's items
    measured_by: tuple[str, ...] = ()


STATE_KEY = pytest.StashKey[FabricState]()
CHECK_KEY = pytest.StashKey[CheckInfo]()
VERDICTS_KEY = pytest.StashKey[list[Verdict]]()  # in the order judged


def get_state(config: pytest.Config) -> FabricState | None:
    return config.stash.get(STATE_KEY, None)
