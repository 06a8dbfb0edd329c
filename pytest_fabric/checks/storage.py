"""Storage (``storage.*``): the mount as stated (findmnt), fio on each mount (sequential, random read,
checkpoint), and every node writing to each shared mount at once: settings, declarations, fixtures.

Each per-mount check runs in a wave, under ``--fabric-fanout``. On a node-local mount (or the temp
dir) every node measures at once. On a shared mount the check's ``measured:`` says what a node's
figure is (pytest_fabric/run/sharing.py): ``alone``, its nodes take turns (``concurrency:`` raises it),
or ``together``, every node at once, each figure its share of the mount. Whether a mount is shared
is decided once per run from its ``shared:`` and what findmnt shows on the nodes (mount_sharing.py,
locality.py). The detail and ``extra["measured"]`` say which, and what decided it.

The family registers its checks through ``pytest_fabric_checks``, as an extension does; the probe
is :mod:`pytest_fabric.probes.storage`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from pydantic import BeforeValidator, Field, field_validator, model_validator

from pytest_fabric.checks.base import Check
from pytest_fabric.config.inventory import SHARED_FSTYPES, Mount
from pytest_fabric.config.profile import BandwidthFloor, CheckSpec
from pytest_fabric.config.units import Dimension, Quantity, QuantityField, parse_quantity
from pytest_fabric.judge.verdict import Expectation, Measurement, Op
from pytest_fabric.probes import mount_sharing, storage
from pytest_fabric.run import sharing
from pytest_fabric.run.batches import Share
from pytest_fabric.run.cluster import Cluster, NodeHandle
from pytest_fabric.run.fixtures import MountHandle, SpecLookup
from pytest_fabric.run.locality import MountSharing
from pytest_fabric.run.sharing import Measured
from pytest_fabric.run.state import FabricState, get_state
from pytest_fabric.run.waves import wave

__all__ = [
    "AGGREGATE_WRITE",
    "CHECKPOINT_WRITE",
    "MOUNT",
    "RANDOM_READ_IOPS",
    "SEQUENTIAL_READ",
    "SEQUENTIAL_WRITE",
    "AggregateWrite",
    "CheckpointWrite",
    "Iops",
    "StorageBandwidth",
    "pytest_fabric_checks",
]

# ---------------------------------------------------------------------------
# Settings

#: fio engines that issue one request at a time whatever ``iodepth`` says
SYNC_IOENGINES = frozenset({"psync", "sync", "pvsync", "pvsync2"})
IoEngine = Literal["libaio", "io_uring", "posixaio", "psync", "sync", "pvsync", "pvsync2"]
#: the queue depth a parallel filesystem's client is judged at when the profile names none
DEFAULT_IODEPTH = 16


def _resolve_engine(spec: Any, default_depth: int) -> None:
    """Fill in ``ioengine`` and ``iodepth`` where the check leaves them out, and refuse a pair fio
    would not run as written."""
    if spec.ioengine is None:
        # O_DIRECT: an asynchronous engine keeps requests in flight, as Lustre and GPFS clients
        # are judged; buffered: the page cache queues the writes, one request at a time suffices.
        spec.ioengine = "libaio" if spec.direct else "psync"
    if spec.iodepth is None:
        spec.iodepth = 1 if spec.ioengine in SYNC_IOENGINES else default_depth
    if spec.ioengine in SYNC_IOENGINES and spec.iodepth > 1:
        raise ValueError(
            f"ioengine: {spec.ioengine} issues one request at a time, so iodepth: {spec.iodepth} would not be what "
            "runs; use ioengine: libaio (or io_uring) for a queue, or iodepth: 1"
        )
    if spec.ioengine == "libaio" and not spec.direct and spec.iodepth > 1:
        raise ValueError(
            f"ioengine: libaio queues only O_DIRECT I/O: buffered (direct: false) it waits on each request, so "
            f"iodepth: {spec.iodepth} would not be what runs; use direct: true, ioengine: io_uring, or psync"
        )


def _measured(value: Any) -> Any:
    if value not in ("alone", "together"):
        raise ValueError(
            f"{value!r} is not how a figure is measured: write alone (each node's client on a mount no other "
            "node is using, the nodes taking turns) or together (every node at once, each figure its share of "
            "the mount)"
        )
    return value


#: ``measured:`` as written, with an error that says what each value means
MeasuredField = Annotated[Measured, BeforeValidator(_measured)]


def _alone_only_concurrency(spec: Any) -> None:
    if spec.measured == "together" and "concurrency" in spec.model_fields_set:
        raise ValueError(
            f"concurrency: {spec.concurrency} is how many nodes take turns measuring alone; measured: together "
            "runs every node of the wave at once (up to --fabric-fanout): drop concurrency, or say measured: alone"
        )


#: how long each node's fio runs when a per-node storage check is measured together and says no runtime
TOGETHER_RUNTIME = "20 s"


def _whole_seconds(value: Quantity | None) -> Quantity | None:
    """A fio ``--runtime``: whole seconds, at least 1 (fio's own unit; 2.5 s would run as 2)."""
    if value is None:
        return None
    seconds = float(parse_quantity(value, dimension=Dimension.TIME).to("s"))
    if seconds < 1 or seconds != int(seconds):
        raise ValueError(f"{value}: fio's --runtime is given here in whole seconds, at least 1 (e.g. '30 s')")
    return value


def _together_runtime(spec: Any) -> None:
    """Together, each node runs time-based for ``runtime`` (default TOGETHER_RUNTIME), all started at
    once, so every figure covers the same window; alone, fio moves ``size`` once, as it always has."""
    if spec.measured == "together":
        if spec.runtime is None:
            spec.runtime = parse_quantity(TOGETHER_RUNTIME)
    elif spec.runtime is not None:
        raise ValueError(
            f"runtime: {spec.runtime} is how long each node runs when every node measures at once (measured: "
            "together, time-based, so each figure is a share over the same window); measured: alone moves size "
            "once: drop runtime, or say measured: together"
        )


class StorageBandwidth(BandwidthFloor):
    """fio on a mount: ``size`` per job, ``jobs`` at once, ``iodepth`` requests in flight each.

    ``direct: true`` (the default) opens files with O_DIRECT, so the page cache does not
    count as storage; a filesystem that refuses O_DIRECT, or keeps files in memory (tmpfs),
    errors unless the check says ``direct: false`` (buffered I/O, writes ended by fsync).

    ``ioengine`` / ``iodepth``: unset, ``libaio`` at 16 with O_DIRECT (one synchronous 1 MiB
    request at a time under-drives a Lustre or GPFS client), ``psync`` at 1 when buffered.
    """

    SHARES = "mount"
    size: QuantityField = Field(default_factory=lambda: parse_quantity("1 GiB"))
    block_size: QuantityField = Field(default_factory=lambda: parse_quantity("1 MiB"))
    jobs: int = Field(default=1, ge=1, le=256)
    direct: bool = True
    ioengine: IoEngine | None = None
    iodepth: int | None = Field(default=None, ge=1, le=4096)
    #: what a node's figure on a shared mount is (a node-local mount runs on every node at once
    #: either way): "alone", its client on an idle mount, the nodes taking turns; "together",
    #: every node of the wave at once, the figure being the node's share of what the mount gave all
    measured: MeasuredField = "alone"
    #: measured: alone: nodes on a shared mount at once (more is faster, each figure then a share
    #: among that many); all at once would be measured: together
    concurrency: int = Field(default=1, ge=1, le=4096)
    #: measured: together: each node's fio runs this long (--time_based, looping over its file of
    #: ``size``), every node started at once, so each figure is its share over the same window;
    #: unset there: TOGETHER_RUNTIME. Size-based, a node that finished early would leave the mount
    #: to the others, whose figures would then claim more than their share. Alone: unset (size-based)
    runtime: QuantityField | None = None

    _runtime_seconds = field_validator("runtime")(_whole_seconds)

    @model_validator(mode="after")
    def _engine(self) -> Any:
        _resolve_engine(self, DEFAULT_IODEPTH)
        _alone_only_concurrency(self)
        _together_runtime(self)
        return self


class AggregateWrite(StorageBandwidth):
    """Every node writing to a shared mount at once, each for ``runtime`` (fio ``--time_based``),
    looping over a file of ``size``: judged by the bytes all of them wrote over the span from the
    first start to the last end, never by adding the nodes' own rates (a node that finishes early
    frees bandwidth for the others, so the sum says more than the filesystem did)."""

    runtime: QuantityField = Field(default_factory=lambda: parse_quantity("30 s"))
    measured: MeasuredField = "together"  # what the aggregate is; alone would be sequential_write

    @field_validator("measured")
    @classmethod
    def _together(cls, value: str) -> str:
        if value != "together":
            raise ValueError(
                f"measured: {value}: aggregate_write is every node writing at once, always together; a node's "
                "figure alone is sequential_write's (measured: alone)"
            )
        return value


class CheckpointWrite(StorageBandwidth):
    """A checkpoint as training jobs write one: ``size`` in all per node, split over ``jobs`` writers,
    buffered writes each ended by fsync, the time to fsync counted.

    Defaults follow PyTorch's distributed checkpoint writer (torch.distributed.checkpoint
    FileSystemWriter: one file per rank, one writer thread per rank, buffered writes, each
    file fsynced, ``sync_files=True``): 8 writers, one per rank of an 8-GPU node, buffered.
    torch.save and safetensors also write through the page cache.
    """

    size: QuantityField = Field(default_factory=lambda: parse_quantity("4 GiB"))
    jobs: int = Field(default=8, ge=1, le=256)
    direct: bool = False


class Iops(CheckSpec):
    BOUNDS = (("min", Op.MIN, Dimension.COUNT),)
    SHARES = "mount"
    min: QuantityField | None = None
    block_size: QuantityField = Field(default_factory=lambda: parse_quantity("4 KiB"))
    iodepth: int = Field(default=32, ge=1, le=4096)
    #: unset: libaio (at iodepth 1, psync); a synchronous engine needs iodepth: 1
    ioengine: IoEngine | None = None
    size: QuantityField = Field(default_factory=lambda: parse_quantity("1 GiB"))
    #: time-based alone and together (together: every node started at once, the same window)
    runtime: QuantityField = Field(default_factory=lambda: parse_quantity("10 s"))
    direct: bool = True  # as StorageBandwidth: O_DIRECT unless the check says otherwise
    measured: MeasuredField = "alone"  # as StorageBandwidth, on shared mounts
    concurrency: int = Field(default=1, ge=1, le=4096)  # as StorageBandwidth, on shared mounts

    _runtime_seconds = field_validator("runtime")(_whole_seconds)

    @model_validator(mode="after")
    def _engine(self) -> Any:
        if self.ioengine is None:
            self.ioengine = "libaio" if self.iodepth > 1 else "psync"  # what it has always run
        elif self.ioengine in SYNC_IOENGINES and self.iodepth > 1:
            raise ValueError(f"ioengine: {self.ioengine} issues one request at a time; give iodepth: 1, or libaio")
        _alone_only_concurrency(self)
        return self


# ---------------------------------------------------------------------------
# Declarations: per mount of the inventory on each node, and all nodes at once on a shared mount

#: judged by what the inventory states of the mount, not by a profile key
MOUNT: Check[Any] = Check("mount", "storage", None, "mount", "wave")
SEQUENTIAL_READ = Check("sequential_read", "storage", StorageBandwidth, "mount", "wave", tools=("fio",),
                        needs=("mounts",))
SEQUENTIAL_WRITE = Check("sequential_write", "storage", StorageBandwidth, "mount", "wave", tools=("fio",),
                         needs=("mounts",))
RANDOM_READ_IOPS = Check("random_read_iops", "storage", Iops, "mount", "wave", tools=("fio",), needs=("mounts",))
CHECKPOINT_WRITE = Check("checkpoint_write", "storage", CheckpointWrite, "mount", "wave", tools=("fio",),
                         needs=("mounts",))
AGGREGATE_WRITE = Check("aggregate_write", "storage", AggregateWrite, "cluster", "cluster", tools=("fio",),
                        needs=("mounts", "shared_mount"))


def pytest_fabric_checks(config: pytest.Config) -> list[Check[Any]]:
    """pytest-fabric registers this family the way an extension registers its checks."""
    return [MOUNT, SEQUENTIAL_READ, SEQUENTIAL_WRITE, RANDOM_READ_IOPS, CHECKPOINT_WRITE, AGGREGATE_WRITE]


# ---------------------------------------------------------------------------
# Measurement fixtures

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


def _witnesses(request: pytest.FixtureRequest, mount: MountHandle) -> bool:
    """Whether fio's bytes are held to the storage's own counters (on unless --fabric-no-witness).

    Not on a mount several nodes share: their I/O reaches the same device's counters, so one node's
    bytes cannot be told from the others' (a healthy shared mount written together was called
    uncorroborated; others' reads would pad a reader's counters). Such a check has no witness and
    is never counted as corroborated."""
    state = get_state(request.config)
    if state is None or not state.witnesses:
        return False
    return not sharing.mount_is_shared(state.inventory, mount.path, _found(state, mount.path))


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
    settings = dataclasses.replace(_settings(spec(SEQUENTIAL_READ), "read", "storage.sequential_read"),
                                   witness=_witnesses(request, mount))
    measured = _measure(request, "sequential_read", mount, "sequential", settings, lambda: storage.sequential(
        mount.node, _spec_of(request, mount), settings, _peers(cluster, mount.node)))
    return _as_measured(request, "sequential_read", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("sequential_write"))
def sequential_write(request: pytest.FixtureRequest, mount: MountHandle, spec: SpecLookup) -> Measurement:
    settings = dataclasses.replace(_settings(spec(SEQUENTIAL_WRITE), "write", "storage.sequential_write"),
                                   witness=_witnesses(request, mount))
    measured = _measure(request, "sequential_write", mount, "sequential", settings,
                        lambda: storage.sequential(mount.node, _spec_of(request, mount), settings))
    return _as_measured(request, "sequential_write", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("random_read_iops"))
def random_read_iops(request: pytest.FixtureRequest, mount: MountHandle, cluster: Cluster, spec: SpecLookup) -> Measurement:
    """fio randread for ``runtime`` at ``iodepth`` (libaio): IOPS as a count, of files the node did not write."""
    settings = spec(RANDOM_READ_IOPS)
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
        witness=_witnesses(request, mount),
    )
    measured = _measure(request, "random_read_iops", mount, "random_read", fio_settings, lambda: storage.random_read(
        mount.node, _spec_of(request, mount), fio_settings, _peers(cluster, mount.node)))
    return _as_measured(request, "random_read_iops", mount, measured)


@pytest.fixture
@wave("mount", shares=_takes_turns("checkpoint_write"))
def checkpoint_write(request: pytest.FixtureRequest, mount: MountHandle, spec: SpecLookup) -> Measurement:
    """``size`` in all, split over ``jobs`` writers, each ended by fsync: what saving a checkpoint costs."""
    settings = spec(CHECKPOINT_WRITE)
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
        witness=_witnesses(request, mount),
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
    aggregate = spec(AGGREGATE_WRITE)
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
