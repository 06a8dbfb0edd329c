"""Cluster fixtures: the subjects a conformance test is about, and how it states a verdict.

Subjects are parametrized at collection from the inventory and profile, with
ids that read as the subject and are the same in every process (pytest-xdist
collects on each worker): ``node01``, ``node01<->node02``, ``node01:/scratch``,
``node01:gpu3``, ``node01:port0``, ``node01:mirror.example.com``.

- ``cluster``: the whole cluster (session scope; connects to every node in parallel).
- ``node``: one per node.  ``node_pair``: pairs from the profile's ``pairs`` strategy.
- ``gpu``, ``hca``: one per GPU / RDMA port the profile expects on each node; above
  ``--fabric-device-tests-up-to`` nodes (256) one per node, judging each of its GPUs / ports (:class:`NodeParts`).
- ``mount``: one per node and inventory mount (a temp dir when the inventory lists none).
- ``egress_target``: one per node and inventory egress target.
- ``spec(key)``: the profile's settings for a check; skips the test when the profile has none.
- ``judge(measurement, key)``: compares with the profile, records the verdict, fails with a readable message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, overload

import pytest

from pytest_fabric.checks.base import Check
from pytest_fabric.config.profile import CheckSpec, Count, Ports
from pytest_fabric.judge.verdict import Expectation, Measurement, Verdict
from pytest_fabric.judge.verdict import judge as judge_measurement
from pytest_fabric.run.cluster import Cluster, NodeHandle, NodePair
from pytest_fabric.run.open_cluster import open_cluster
from pytest_fabric.run.pairs import Pair
from pytest_fabric.run.state import CHECK_KEY, VERDICTS_KEY, get_state
from pytest_fabric.run.subjects import layer_and_check, subject_id, subject_parts
from pytest_fabric.transport.base import Transport

__all__ = ["MountHandle", "EgressTarget", "GpuHandle", "HcaHandle", "NodeParts", "Judge"]

NOT_CONFIGURED = "pytest-fabric: run with --cluster INVENTORY --profile NAME to measure a cluster"


@dataclass(frozen=True)
class MountHandle:
    node: NodeHandle
    path: str | None  # None: no mounts in the inventory; a temp dir on the node's /tmp is used

    @property
    def id(self) -> str:
        return f"{self.node.name}:{self.path or 'tmp'}"


@dataclass(frozen=True)
class EgressTarget:
    node: NodeHandle
    target: str


@dataclass(frozen=True)
class GpuHandle:
    node: NodeHandle
    index: int


@dataclass(frozen=True)
class HcaHandle:
    """An RDMA port of ``node``: by name (``mlx5_0/1``) when the inventory lists the node's
    ``rdma_ports`` or the profile's ``ports`` names them, else the ``index``-th port the
    profile expects (resolved on first use)."""

    node: NodeHandle
    index: int | str


@dataclass(frozen=True)
class NodeParts:
    """All of a node's GPUs (or RDMA ports) as the subject of one test: each is measured and
    judged on its own (``parts``: its subject id and handle), the test fails naming each that fails."""

    node: NodeHandle
    parts: tuple[tuple[str, GpuHandle | HcaHandle], ...]


def _subject_params(metafunc: pytest.Metafunc) -> tuple[str, list[Any], list[str]] | None:
    state = get_state(metafunc.config)
    if state is None:
        return None
    names = metafunc.fixturenames
    nodes = state.inventory.node_names
    if "node_pair" in names:
        return "node_pair", list(state.pairs), [subject_id("node_pair", p) for p in state.pairs]
    if "mount" in names:
        mounts: list[str | None] = list(state.inventory.mounts) or [None]
        on_mounts = [(n, m) for n in nodes for m in mounts]
        return "mount", list(on_mounts), [subject_id("mount", p) for p in on_mounts]
    if "egress_target" in names:
        targets = [(n, t) for n in nodes for t in state.inventory.egress_targets]
        return "egress_target", list(targets), [subject_id("egress_target", p) for p in targets]
    if "gpu" in names:
        count = _expected_count(state.checks.statement(state.profile, "gpus", Count))
        if len(nodes) > state.device_tests_up_to:
            whole: list[Any] = [(n, tuple(range(count))) for n in nodes] if count else []
            return "gpu", whole, [subject_id("gpu", p) for p in whole]
        gpus = [(n, i) for n in nodes for i in range(count)]
        return "gpu", list(gpus), [subject_id("gpu", p) for p in gpus]
    if "hca" in names:
        # Subjects are the real ports wherever someone named them (the node's inventory
        # rdma_ports, else the profile's ports.names); only unnamed ports are slots.
        ports_spec = state.checks.statement(state.profile, "rails", Ports)
        count = _expected_count(ports_spec)
        profile_names = list(getattr(ports_spec, "names", None) or [])
        hcas: list[tuple[str, Any]] = []
        named_ports = {node.name: node.rdma_ports for node in state.inventory.nodes}
        per_node = len(nodes) > state.device_tests_up_to
        for n in nodes:
            named = list(named_ports[n]) or profile_names
            ports: list[int | str] = list(named) if named else list(range(count))
            if per_node:
                hcas += [(n, tuple(ports))] if ports else []
            else:
                hcas += [(n, port) for port in ports]
        return "hca", list(hcas), [subject_id("hca", p) for p in hcas]
    if "node" in names:
        return "node", list(nodes), list(nodes)
    return None


def _expected_count(spec: CheckSpec | None) -> int:
    if spec is None:
        return 0
    value = getattr(spec, "equal", None) or getattr(spec, "min", None)
    return int(value.value) if value is not None else 0


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    found = _subject_params(metafunc)
    if found is None:
        return
    name, params, ids = found
    state = get_state(metafunc.config)
    assert state is not None
    unset = _unset_at_scale(metafunc, state)
    if unset is not None:
        # At scale a check the profile does not set is one skipped test, not one per subject
        # (16,384 of ndr400-large's tests at 4,096 nodes): it is not a check of this run.
        reason = f"profile {state.profile.name} does not set {unset}"
        metafunc.parametrize(name, [pytest.param(None, marks=pytest.mark.skip(reason=reason))], ids=["not-set"],
                             indirect=True)
        return
    if not params:
        # pytest's own "got empty parameter set" skip, with an id of NOTSET, says nothing
        # useful; say which inventory or profile entry would give this test subjects.
        reason = _NO_SUBJECTS.get(name, "no subjects").format(profile=state.profile.name)
        metafunc.parametrize(
            name, [pytest.param(None, marks=pytest.mark.skip(reason=reason))], ids=[f"no-{name}"], indirect=True
        )
        return
    metafunc.parametrize(name, params, ids=ids, indirect=True)


def _unset_at_scale(metafunc: pytest.Metafunc, state: Any) -> str | None:
    """``layer.check`` when the profile does not set the test's check and the cluster is large
    (above --fabric-device-tests-up-to nodes); None otherwise."""
    if len(state.inventory.node_names) <= state.device_tests_up_to:
        return None
    found = layer_and_check(metafunc.definition, metafunc.function.__name__)
    if found is None or found[1] == "mount":  # the mount check is judged by what the inventory states
        return None
    layer, check = found
    key = state.checks.profile_key_of(check, layer)
    return None if state.checks.is_set(state.profile, check, layer) else f"{layer}.{key}"


_NO_SUBJECTS = {
    "node_pair": "no node pairs: the pairing strategy gave none",
    "egress_target": "no egress targets: the inventory lists none under egress.targets",
    "gpu": "no GPUs to test: profile {profile} does not set intra_node.gpu_count",
    "hca": "no RDMA ports to test: profile {profile} does not set inter_node.ports",
}


def _state(request: pytest.FixtureRequest) -> Any:
    state = get_state(request.config)
    if state is None:
        pytest.skip(NOT_CONFIGURED)
    return state


def _param(request: pytest.FixtureRequest, what: str) -> Any:
    if not hasattr(request, "param"):
        pytest.skip(f"no {what} to test: the inventory and profile give none")
    return request.param


def make_transport_for(config: pytest.Config) -> Callable[[str], Transport]:
    state = get_state(config)
    assert state is not None

    def make(name: str) -> Transport:
        node = state.inventory.node(name)
        transport = config.hook.pytest_fabric_make_transport(node=node, config=config)
        if transport is None:  # pragma: no cover - our trylast implementation always answers
            raise RuntimeError(f"no plugin provides a transport for {name}")
        return transport  # type: ignore[no-any-return]

    return make


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Cluster:
    """The cluster under test; connections to all nodes are opened in parallel on first use, then the
    nodes are locked for this run (run/cluster_lock.py)."""
    # Unreachable nodes are found there, all at once, rather than one timeout per test.
    return open_cluster(request.config, _state(request), make_transport_for(request.config))


def handle_for(cluster: Cluster, subject: str, param: Any) -> Any:
    """What a subject fixture gives a test for ``param`` (a wave builds its siblings' with it)."""
    if subject == "node":
        return cluster.node(param)
    if subject == "node_pair":
        return cluster.pair(param.a, param.b, param.round, param.slot)
    node_name, what = param
    handle = {"mount": MountHandle, "egress_target": EgressTarget, "gpu": GpuHandle, "hca": HcaHandle}[subject]
    if subject in ("gpu", "hca") and isinstance(what, tuple):
        node = cluster.node(node_name)
        return NodeParts(node, tuple((subject_id(subject, part), handle(node, part[1])) for part in subject_parts(subject, param)))
    return handle(cluster.node(node_name), what)


@pytest.fixture
def node_pair(request: pytest.FixtureRequest, cluster: Cluster) -> NodePair:
    """Two nodes: ``a`` runs clients, ``b`` servers.  Pairs come in rounds of disjoint pairs."""
    pair: Pair = _param(request, "node pair")
    return cluster.pair(pair.a, pair.b, pair.round, pair.slot)


@pytest.fixture
def node(request: pytest.FixtureRequest, cluster: Cluster) -> NodeHandle:
    """One node of the inventory."""
    return handle_for(cluster, "node", _param(request, "node"))  # type: ignore[no-any-return]


@pytest.fixture
def mount(request: pytest.FixtureRequest, cluster: Cluster) -> MountHandle:
    return handle_for(cluster, "mount", _param(request, "mount"))  # type: ignore[no-any-return]


@pytest.fixture
def egress_target(request: pytest.FixtureRequest, cluster: Cluster) -> EgressTarget:
    return handle_for(cluster, "egress_target", _param(request, "egress target"))  # type: ignore[no-any-return]


@pytest.fixture
def gpu(request: pytest.FixtureRequest, cluster: Cluster) -> GpuHandle:
    return handle_for(cluster, "gpu", _param(request, "GPU"))  # type: ignore[no-any-return]


@pytest.fixture
def hca(request: pytest.FixtureRequest, cluster: Cluster) -> HcaHandle:
    return handle_for(cluster, "hca", _param(request, "RDMA port"))  # type: ignore[no-any-return]


S = TypeVar("S", bound=CheckSpec)


class SpecLookup(Protocol):
    """What the ``spec`` fixture gives a measurement fixture: a declared check's settings, typed."""

    @overload
    def __call__(self, check: Check[S]) -> S: ...
    @overload
    def __call__(self, check: str) -> Any: ...


@pytest.fixture
def spec(request: pytest.FixtureRequest) -> SpecLookup:
    """``spec(checks.TCP_THROUGHPUT)``: the profile's settings for a check (its model), or skip when it
    sets none.  A check of one's own may name its key: ``spec("inter_node.my_check")``."""
    state = _state(request)

    def lookup(check: Check[Any] | str) -> Any:
        if isinstance(check, str):
            layer, _, key = check.partition(".")
            found: Any = state.profile.spec(layer, key)
            name = check
        else:
            found, name = state.profile.spec_of(check), check.profile_key
        if found is None:
            pytest.skip(f"profile {state.profile.name} does not set {name}")
        return found

    return lookup


class Judge(Protocol):
    """What the ``judge`` fixture gives a conformance test."""

    def __call__(
        self, measurement: Measurement, key: str | None = None, expectations: list[Expectation] | None = None
    ) -> list[Verdict]: ...


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> Judge:
    """``judge(measurement)``: every bound the profile sets for the test's check must hold.

    The profile key is the one the check is declared with (:mod:`pytest_fabric.checks.base`:
    ``test_rdma_bandwidth_outlier`` is judged by ``inter_node.outlier``); a test of one's own
    names it (``judge(measurement, "inter_node.mtu")``).  A failed bound fails the test with the
    verdict's message; a failed bound whose expectation carries ``waiver:`` is reported as waived (an xfail) instead.
    ``expectations`` replaces the profile's where the inventory states them (the mount check).
    """
    state = _state(request)
    item = request.node

    def run(measurement: Measurement, key: str | None = None,
            expectations: list[Expectation] | None = None) -> list[Verdict]:
        __tracebackhide__ = True
        info = item.stash.get(CHECK_KEY, None)
        if key is None:
            if info is None:
                raise TypeError(f"judge(): {item.nodeid} has no layer marker, so name the profile key: "
                                "judge(measurement, 'layer.check')")
            key = f"{info.layer}.{state.checks.profile_key_of(info.check, info.layer)}"
        layer, _, check = key.partition(".")
        if expectations is None:
            expectations = state.profile.expectations(layer, check)
        if not expectations:
            pytest.skip(f"profile {state.profile.name} does not set {key}")
        subject = info.subject if info else item.name
        judged = measurement.parts or ((subject, measurement),)
        verdicts = [judge_measurement(part, measured, e) for part, measured in judged for e in expectations]
        item.stash[VERDICTS_KEY] = verdicts
        failed = [v for v in verdicts if not v.passed]
        if failed:
            message = "\n".join(v.message for v in failed)
            waivers = {v.expectation.waiver for v in failed}
            if None not in waivers:
                pytest.xfail(f"waived ({'; '.join(sorted(w for w in waivers if w))}): {message}")
            pytest.fail(message, pytrace=False)
        return verdicts

    return run
