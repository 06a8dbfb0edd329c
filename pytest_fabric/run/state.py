"""The plugin's per-run state, kept in ``config.stash`` (never in module globals)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from pytest_fabric.checks.base import NO_CHECKS, CheckRegistry
from pytest_fabric.config.inventory import Inventory
from pytest_fabric.config.profile import Profile
from pytest_fabric.judge.verdict import Verdict
from pytest_fabric.run.batches import BatchCache
from pytest_fabric.run.once import Once
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.subjects import DEVICE_TESTS_UP_TO, subject_id
from pytest_fabric.run.tenant_tools import TenantTools
from pytest_fabric.transport.results import HostKeyLog
from pytest_fabric.transport.ssh import JumpHosts, SSHTransport

if TYPE_CHECKING:
    from pytest_fabric.run.cluster import Cluster

__all__ = ["FabricState", "STATE_KEY", "get_state", "CheckInfo", "CHECK_KEY", "VERDICTS_KEY"]


@dataclass
class FabricState:
    inventory: Inventory
    profile: Profile
    pairs: list[Pair]
    host_key_policy: str
    #: every check of the run, the extensions' too (``pytest_fabric_checks``, assembled at configure)
    checks: CheckRegistry = NO_CHECKS
    ssh_config: str | None = None
    #: above this many nodes one test per node and check judges all of a node's GPUs (ports)
    device_tests_up_to: int = DEVICE_TESTS_UP_TO
    cluster: Cluster | None = None
    #: per measurement fixture, (subject fixture, parameter) of the selected tests using it, in
    #: run order, after -k/-m/--lf/--deselect: a wave measures these, a round the pairs of it
    #: among them (``("node_pair", Pair)``); read through :meth:`selected`
    selected_subjects: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    #: waves and rounds: subjects measured as a batch (see waves.py)
    batches: BatchCache = field(default_factory=BatchCache)
    #: connections to jump hosts, shared by every node behind them
    jump_hosts: JumpHosts[SSHTransport] = field(default_factory=JumpHosts)
    #: which host keys the run's connections verified, accepted new or accepted although they differ
    host_keys: HostKeyLog = field(default_factory=HostKeyLog)
    #: read counters the tools do not keep before and after each measurement (--fabric-no-witness: off)
    witnesses: bool = True
    #: everything else computed once per run: a node's ports, topology, preflight, the error
    #: counters before any traffic, attribution, ... (one error policy: see once.py)
    once: Once = field(default_factory=Once)
    #: the tenant's pinned tools (inventory ``tools:``), routed by NodeHandle.tool; None: the nodes' own
    tenant_tools: TenantTools | None = None

    def rounds_index(self) -> dict[int, list[Pair]]:
        """The scheduled pairs by round, in round order (built once: tests look up their round often)."""

        def build() -> dict[int, list[Pair]]:
            index: dict[int, list[Pair]] = {}
            for pair in sorted(self.pairs, key=lambda p: p.round):
                index.setdefault(pair.round, []).append(pair)
            return index

        return self.once.get("rounds index", None, build)

    def selected(self, fixture: str, subject: str) -> dict[str, Any] | None:
        """The ``subject`` parameters of the selected tests that use measurement ``fixture``, by subject id,
        in run order; None when no selected test uses it (worked out once, after collection)."""

        def build() -> dict[str, Any] | None:
            entries = self.selected_subjects.get(fixture)
            if entries is None:
                return None
            return {subject_id(kind, param): param for kind, param in entries if kind == subject}

        return self.once.get("selected", (fixture, subject), build)


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
#: an item's time in setup and call (what its record says it took) and when its call began
ELAPSED_KEY = pytest.StashKey[float]()
STARTED_KEY = pytest.StashKey[str]()


def get_state(config: pytest.Config) -> FabricState | None:
    return config.stash.get(STATE_KEY, None)
