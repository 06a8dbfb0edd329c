"""Storage measurements: the mount as stated (findmnt), fio on each mount (sequential, random read,
checkpoint), and every node writing to each shared mount at once.

Each per-mount check runs in a wave, under ``--fabric-fanout``. On a node-local mount (or the temp
dir) every node measures at once. On a shared mount the check's ``measured:`` says what a node's
figure is (pytest_fabric/run/sharing.py): ``alone``, its nodes take turns (``concurrency:`` raises it),
or ``together``, every node at once, each figure its share of the mount. Whether a mount is shared
is decided once per run from its ``shared:`` and what findmnt shows on the nodes (mount_sharing.py,
locality.py). The detail and ``extra["measured"]`` say which, and what decided it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from pytest_fabric.checks import base as checks
from pytest_fabric.config.inventory import SHARED_FSTYPES, Mount
from pytest_fabric.judge.verdict import Expectation, Measurement, Op
from pytest_fabric.probes import mount_sharing, storage
from pytest_fabric.run import sharing
from pytest_fabric.run.batches import Share
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import MountHandle, SpecLookup
from pytest_fabric.run.locality import MountSharing
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave

_NO_MOUNTS = "the inventory lists no storage.mounts: the storage checks use a temp dir under /tmp, which is no mount to check"


def _spec_of(request: pytest.FixtureRequest, mount: MountHandle) -> Mount | None:
    state = get_state(request.config)
    assert state is not None  # `mount` skips first when the plugin is not configured
    return state.inventory.mount(mount.path) if mount.path else None


def _found(state: FabricState, path: str | None) -> MountSharing | None:
    """Whether ``path`` is shared, as the run decided it from the inventory and findmnt (mount_sharing.py)."""
    if path is None or state.cluster is None:
        return None
    return mount_sharing.mount_sharing(state, state.cluster, path)


def _takes_turns(check: str) -> Callable[[FabricState, MountHandle], Share | None]:
    """What a node measuring ``check`` on its mount shares (sharing.py: the plan reads the same rule)."""

    def share(state: FabricState, mount: MountHandle) -> Share | None:
        return sharing.mount_share(state.inventory, state.profile, check, mount.path, _found(state, mount.path))

    return share


def _as_measured(request: pytest.FixtureRequest, check: str, mount: MountHandle, measured: Measurement) -> Measurement:
    """``measured`` saying what its figure is: a node-local disk's, a client alone on a shared mount, or its share."""
    state = get_state(request.config)
    if state is None:
        return measured
    path = mount.path
    found = _found(state, path)
    if path is None or not sharing.mount_is_shared(state.inventory, path, found):
        note = "node-local: every node measures its own disk at the same time"
        if found is not None:
            note += f" ({found.why})"
        how: dict[str, Any] = {"mode": "node-local"}
    else:
        on_mount = [p for p in (state.selected(check, "mount") or {}).values() if p[1] == path]
        nodes = max(1, len(on_mount))
        share = sharing.mount_share(state.inventory, state.profile, check, path, found)
        fanout = state.batches.fanout
        if share is None:
            at_once = sharing.at_once(None, nodes, fanout)
            how = {"mode": "together", "nodes": nodes, "at_once": at_once}
            cap = "" if at_once >= nodes else f", {at_once} at a time under --fabric-fanout {fanout}"
            note = (f"measured together (storage.{check}.measured: together): {nodes} node(s) on the shared mount "
                    f"{path} at once{cap}, so the figure is this node's share of what the mount gave them, and is "
                    "judged as that share")
        else:
            at_once = sharing.at_once(share, nodes, fanout)
            how = {"mode": "alone", "nodes": nodes, "at_once": at_once}
            taking = "one node at a time" if at_once == 1 else f"{at_once} of the {nodes} nodes at a time, each figure a share among {at_once}"
            note = (f"measured alone (storage.{check}.measured: alone): {taking} on the shared mount {path}, "
                    "so the figure is this node's client on a mount no other node was using")
    if found is not None:
        how["sharing"] = found.to_json()
    detail = f"{measured.detail}; {note}" if measured.detail else note
    return dataclasses.replace(measured, detail=detail, extra={**measured.extra, "measured": how})


def _peers(cluster: Cluster, node: NodeHandle) -> list[NodeHandle]:
    """The other nodes, starting after ``node`` in inventory order: who may lay out files it reads."""
    nodes = cluster.nodes
    at = next(i for i, n in enumerate(nodes) if n.name == node.name)
    return nodes[at + 1 :] + nodes[:at]


def _settings(spec: Any, rw: str, check: str) -> storage.FioSettings:
    runtime = getattr(spec, "runtime", None)  # measured: together (the profile fills it in): time-based
    return storage.FioSettings(
        rw=rw,
        size_bytes=int(spec.size.to("B")),
        block_size_bytes=int(spec.block_size.to("B")),
        jobs=spec.jobs,
        direct=spec.direct,
        iodepth=spec.iodepth,
        ioengine=spec.ioengine,
        runtime_s=float(runtime.to("s")) if runtime is not None else None,
        check=check,
        corroborate=True,
    )


def _measure(request: pytest.FixtureRequest, check: str, mount: MountHandle, figure: str,
             settings: storage.FioSettings, alone: Callable[[], Measurement]) -> Measurement:
    """``alone()``, or, measured together on a shared mount, this node's figure from one run of all the
    wave's nodes on the mount started at once (storage.together: time-based, the same window for all).

    The first member of the wave to ask runs it for every node of the wave on that mount; the others
    read their own figure (or error) from it, so the nodes start together, not as each member's own
    preparation ends.
    """
    state = get_state(request.config)
    path = mount.path
    if (state is None or state.cluster is None or path is None or not settings.runtime_s
            or not sharing.mount_is_shared(state.inventory, path, _found(state, path))
            or sharing.measured_mode(state.profile, check) != "together"):
        return alone()
    cluster = state.cluster
    named = {n.name: n for n in cluster.nodes}
    on_mount = [p[0] for p in (state.selected(check, "mount") or {}).values() if p[1] == path]
    names = list(dict.fromkeys(n for n in on_mount if n in named))
    if mount.node.name not in names:
        return alone()  # a node the selection left out of the wave: it has no together run to join
    spec = state.inventory.mount(path)
    at_once = sharing.at_once(None, len(names), state.batches.fanout)
    outcomes = state.once.get("storage together", (check, path), lambda: storage.together(
        [named[n] for n in names], spec, settings, figure, lambda node: _peers(cluster, node), at_once))
    outcome = outcomes[mount.node.name]
    if isinstance(outcome, Exception):
        raise outcome
    return outcome


@pytest.fixture
@wave("mount")
def mount_state(request: pytest.FixtureRequest, mount: MountHandle) -> Measurement:
    """What is mounted at the inventory's mount path on the node (findmnt)."""
    state = get_state(request.config)
    assert state is not None
    if mount.path is None:
        pytest.skip(_NO_MOUNTS)
    if not any(check.startswith("storage.") for check in state.profile.set_checks()):
        pytest.skip(f"profile {state.profile.name} sets no storage checks")
    # The reading the run's sharing decision made (mount_sharing.py), if it made one: findmnt once.
    return storage.mount_measurement(mount_sharing.mount_reading(state, mount.node, mount.path))


@pytest.fixture
def mount_expected(request: pytest.FixtureRequest, mount: MountHandle, mount_state: Measurement) -> list[Expectation]:
    """The inventory's statement about this mount, as expectations: mounted, and of the type and options written."""
    state = get_state(request.config)
    assert state is not None and mount.path is not None
    spec = state.inventory.mount(mount.path)
    index = state.inventory.mounts.index(mount.path)

    def expect(bound: str, value: str) -> Expectation:
        return Expectation(
            layer="storage", check="mount", op=Op.EQUAL, value=value, key=f"storage.mount.{bound}",
            profile=state.profile.name, source=f"inventory {state.inventory.path}: storage.mounts[{index}]",
        )

    out = [expect("mounted", "yes")]
    if spec.fstype:
        out.append(expect("fstype", spec.fstype))
    if spec.options:
        out.append(expect("options", ",".join(spec.options)))
    # Not mounted at all: one reason, not the same one once per bound.
    return out[:1] if mount_state.missing else out


@pytest.fixture
@wave("mount", shares=_takes_turns("sequential_read"))
def sequential_read(request: pytest.FixtureRequest, mount: MountHandle, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """Reads files ``mount.node`` did not write: laid out by another node on a shared mount, else caches dropped."""
    settings = _settings(spec(checks.SEQUENTIAL_READ), "read", "storage.sequential_read")
    measured = _measure(request, "sequential_read", mount, "sequential", settings, lambda: storage.sequential(
        mount.node, _spec_of(request, mount), settings, _peers(cluster, mount.node)))
    return _as_measured(request, "sequential_read", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("sequential_write"))
def sequential_write(request: pytest.FixtureRequest, mount: MountHandle, spec: SpecLookup) -> Measurement:
    settings = _settings(spec(checks.SEQUENTIAL_WRITE), "write", "storage.sequential_write")
    measured = _measure(request, "sequential_write", mount, "sequential", settings,
                        lambda: storage.sequential(mount.node, _spec_of(request, mount), settings))
    return _as_measured(request, "sequential_write", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("random_read_iops"))
def random_read_iops(request: pytest.FixtureRequest, mount: MountHandle, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """fio randread for ``runtime`` at ``iodepth`` (libaio): IOPS as a count, of files the node did not write."""
    settings = spec(checks.RANDOM_READ_IOPS)
    fio_settings = storage.FioSettings(
        rw="randread",
        size_bytes=int(settings.size.to("B")),
        block_size_bytes=int(settings.block_size.to("B")),
        iodepth=settings.iodepth,
        ioengine=settings.ioengine,
        runtime_s=float(settings.runtime.to("s")),
        direct=settings.direct,
        check="storage.random_read_iops",
        corroborate=True,
    )
    measured = _measure(request, "random_read_iops", mount, "random_read", fio_settings, lambda: storage.random_read(
        mount.node, _spec_of(request, mount), fio_settings, _peers(cluster, mount.node)))
    return _as_measured(request, "random_read_iops", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("checkpoint_write"))
def checkpoint_write(request: pytest.FixtureRequest, mount: MountHandle, spec: SpecLookup) -> Measurement:
    """``size`` in all, split over ``jobs`` writers, each ended by fsync: what saving a checkpoint costs."""
    settings = spec(checks.CHECKPOINT_WRITE)
    block = int(settings.block_size.to("B"))
    # Each writer's share, in whole blocks: the node writes `size` in all, as a sharded checkpoint does.
    share = max(block, int(settings.size.to("B")) // settings.jobs // block * block)
    fio_settings = storage.FioSettings(
        rw="write",
        size_bytes=share,
        block_size_bytes=block,
        jobs=settings.jobs,
        direct=settings.direct,
        iodepth=settings.iodepth or 1,  # the profile fills it in (psync, 1: buffered writers)
        ioengine=settings.ioengine,
        fsync_on_close=True,
        corroborate=True,
        # Together applies here too, time-based: each node's buffered writers loop over their
        # files for `runtime`, then fsync (fio's end_fsync runs after the time_based loop and
        # counts in the job's runtime), so the figure is still data made durable, and every
        # node writes in the same window. Size-based, a node done with its checkpoint early
        # would leave the mount to the slower ones, inflating their figures. What the window
        # cannot align is each node's closing flush of what its page cache still holds: small
        # where the kernel's dirty limits are small against `runtime` x the node's rate, most
        # of the run on a node whose RAM takes the whole window's writes (the detail says so).
        runtime_s=float(settings.runtime.to("s")) if settings.runtime is not None else None,
        check="storage.checkpoint_write",
    )
    measured = _measure(request, "checkpoint_write", mount, "checkpoint", fio_settings,
                        lambda: storage.checkpoint_write(mount.node, _spec_of(request, mount), fio_settings))
    return _as_measured(request, "checkpoint_write", mount, measured)


@pytest.fixture
def shared_mount_write(request: pytest.FixtureRequest, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """All nodes write to each shared inventory mount at once, each for ``runtime``: the bytes they
    wrote together over the span from the first start to the last end (never the sum of their rates).

    Only shared mounts: on a node-local disk "all nodes at once" sums N separate disks,
    which says nothing about shared storage.
    """
    aggregate = spec(checks.AGGREGATE_WRITE)
    settings = dataclasses.replace(_settings(aggregate, "write", "storage.aggregate_write"),
                                   runtime_s=float(aggregate.runtime.to("s")))
    state = get_state(request.config)
    assert state is not None  # `cluster` skips first when the plugin is not configured
    specs = list(state.inventory.mount_specs)
    if not specs:
        pytest.skip("aggregate_write needs a shared mount: the inventory lists no storage.mounts")
    shared, reasons = storage.shared_mounts(cluster.nodes[0], specs)
    if not shared:
        pytest.skip(
            f"aggregate_write runs only on shared mounts ({', '.join(sorted(SHARED_FSTYPES))}, or shared: true "
            f"in the inventory): {'; '.join(reasons)}"
        )
    return storage.aggregate_write(cluster.nodes, shared, settings)
