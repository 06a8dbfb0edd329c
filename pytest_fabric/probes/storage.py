"""Storage on a node's mount: is it mounted as stated (findmnt), and how fast is it (fio JSON).

Every throughput measurement first checks that the mount is the one the inventory
states (:func:`check_mount`): an unmounted ``/mnt/lustre`` is an empty directory on
the local disk, and fio would measure that disk "as Lustre".  A mount that is not
as stated is an error for the throughput checks (they did not measure the storage
they name) and a failure for the ``mount`` check.

What counts as storage, not the page cache:

- ``direct`` (the default) opens files with O_DIRECT.  A filesystem that refuses it
  (FUSE, ramfs: ``Invalid argument``) or keeps files in memory anyway (tmpfs, where
  O_DIRECT is accepted since Linux 6.6 and still reads RAM) is an error, unless the
  profile sets ``direct: false`` for the check; then fio runs buffered, writes end
  with fsync, and the record says ``buffered``.
- A read never reads a file the reading node has just written.  On a shared mount
  another node lays the file out (fio ``create_only=1``, which fsyncs it) and the
  reader opens it with ``allow_file_create=0``, so fio cannot quietly write its own.
  On a node-local disk the node lays it out itself, then drops the page cache as
  root (``sync -f DIR; echo 3 > /proc/sys/vm/drop_caches``); where that is refused
  only fio's own ``invalidate=1`` remains (posix_fadvise DONTNEED on the file at
  open: it drops this node's clean pages of that file, never a server's cache).
  The message and the evidence say which happened.

Each run works in a fresh directory under the mount (``mktemp -d``) and removes it
afterwards, so a failed or interrupted check leaves no multi-GiB files on a shared
filesystem. The directory is marked as the run's (``.pytest-fabric-<run>.XXXXXX`` with an
``.owner`` line), so what a controller killed outright left is removed by the next run that
works there (probes/leftovers.py).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_fabric.config.inventory import Mount
from pytest_fabric.config.units import Quantity, bandwidth, parse_quantity
from pytest_fabric.judge import corroboration
from pytest_fabric.judge.verdict import Measurement
from pytest_fabric.parsers import fio
from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.findmnt import FindmntFilesystem, parse_findmnt
from pytest_fabric.probes import leftovers
from pytest_fabric.probes.base import MeasurementError, parse_or_raise
from pytest_fabric.probes.witness import StorageBytes, storage_bytes
from pytest_fabric.run.batches import ALL_AT_ONCE, fan_out
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.base import CommandFailed, ToolMissing, TransportError
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill, quote

__all__ = [
    "MEMORY_FSTYPES",
    "FioSettings",
    "MountState",
    "SharedFigure",
    "WriterRun",
    "aggregate_write",
    "check_mount",
    "checkpoint_write",
    "mount_measurement",
    "random_read",
    "sequential",
    "shared_figure",
    "shared_mounts",
    "together",
    "workdir_for",
]

#: filesystems whose files live in memory: whatever fio does there, it measures RAM
MEMORY_FSTYPES = frozenset({"tmpfs", "ramfs"})
# Of those, the ones that accept O_DIRECT (tmpfs since Linux 6.6) and so need refusing here;
# ramfs refuses it itself (EINVAL) and fio says so.
_DIRECT_INTO_MEMORY = frozenset({"tmpfs"})

_FINDMNT = "findmnt -J -o TARGET,SOURCE,FSTYPE,OPTIONS"
_NO_DIRECTORY = "pytest-fabric: no such directory"
_NOT_MOUNTED = "pytest-fabric: not a mount point"
_DROP_CACHES = "echo 3 > /proc/sys/vm/drop_caches"


@dataclass(frozen=True)
class FioSettings:
    rw: str  # read | write | randread
    size_bytes: int  # per job
    block_size_bytes: int
    jobs: int = 1
    direct: bool = True
    iodepth: int = 1
    #: fio's --ioengine; None: libaio where iodepth is above 1, else psync
    ioengine: str | None = None
    runtime_s: float | None = None
    fsync_on_close: bool = False  # end the writes with fsync, counted in the run (fio end_fsync=1)
    check: str = "storage"  # the profile key, for messages that say what to change
    #: judge each job's io_bytes over its runtime against its bandwidth (a run always does)
    corroborate: bool = False
    #: read the storage's own counters (block device sectors, NFS client bytes) before and after
    #: the run (the witness fio does not control); a run sets it from --fabric-no-witness
    witness: bool = False

    @property
    def writes(self) -> bool:
        return self.rw in ("write", "randwrite")

    @property
    def engine(self) -> str:
        return self.ioengine or ("libaio" if self.iodepth > 1 else "psync")

    @property
    def io_mode(self) -> str:
        return "direct" if self.direct else "buffered"


# ---------------------------------------------------------------------------
# Is the mount there, as stated?


@dataclass(frozen=True)
class MountState:
    """What one node has at a mount path, against what the inventory states there."""

    node: str
    spec: Mount
    exists: bool
    #: the mount whose target is the path (the top one where mounts are stacked)
    mounted: FindmntFilesystem | None
    #: where the path is no mount point: the filesystem it lives on instead
    containing: FindmntFilesystem | None
    evidence: CommandResult

    @property
    def filesystem(self) -> FindmntFilesystem | None:
        """The filesystem I/O under the path reaches, mount point or not."""
        return self.mounted or self.containing

    def option_found(self, wanted: str) -> str:
        """The mounted option of the same name as ``wanted`` (``proto=tcp`` for ``proto=rdma``)."""
        name = wanted.split("=", 1)[0]
        found = self.mounted.option(name) if self.mounted else None
        return found or f"no {name}"

    def problems(self) -> list[str]:
        """Why this is not the mount the inventory states (empty when it is)."""
        path, node = self.spec.path, self.node
        if not self.exists:
            return [f"{path} does not exist on {node}"]
        if self.mounted is None:
            where = (
                f": it is a directory on {self.containing.target} ({self.containing.describe()})"
                if self.containing
                else ""
            )
            return [f"{path} is not a mount point on {node}{where}"]
        out = []
        if self.spec.fstype and self.mounted.fstype != self.spec.fstype:
            out.append(f"{path} on {node} is {self.mounted.describe()}, not {self.spec.fstype} as the inventory states")
        missing = [o for o in self.spec.options if o not in self.mounted.options]
        if missing:
            found = ", ".join(self.option_found(o) for o in missing)
            out.append(
                f"{path} on {node} is mounted without {', '.join(missing)} (found {found}; "
                f"mounted {','.join(self.mounted.options)})"
            )
        return out

    @property
    def ok(self) -> bool:
        return not self.problems()


def _mount_command(path: str) -> str:
    quoted = quote(path)
    # One round trip: the mount at the path, or else (findmnt exits 1) what the path lives on.
    return (
        f"test -d {quoted} || {{ echo {quote(_NO_DIRECTORY)}; exit 0; }}; "
        f"{_FINDMNT} --mountpoint {quoted} && exit 0; rc=$?; [ $rc -eq 1 ] || exit $rc; "
        f"echo {quote(_NOT_MOUNTED)}; {_FINDMNT} --target {quoted}"
    )


def check_mount(node: NodeHandle, spec: Mount) -> MountState:
    """What ``node`` has at ``spec.path``: ``findmnt --mountpoint``, or ``--target`` where it is no mount point."""
    command = _mount_command(spec.path)
    result = node.run(command, timeout=15, check=False)
    if result.exit_code == 127:
        raise ToolMissing(node.name, "findmnt", command=command, package="util-linux")
    out = result.stdout
    if out.strip() == _NO_DIRECTORY:
        return MountState(node.name, spec, False, None, None, result)
    if result.exit_code != 0:
        raise CommandFailed(result, fix=f"run findmnt --mountpoint {spec.path} by hand on {node.name}")
    try:
        listed = parse_findmnt(out.split(_NOT_MOUNTED, 1)[-1])
    except ParseError as exc:
        raise MeasurementError(
            node.name, f"could not read findmnt's output: {exc}", command=command,
            fix="findmnt -J needs util-linux 2.27 or later",
        ) from exc
    if _NOT_MOUNTED in out:
        return MountState(node.name, spec, True, None, listed[-1], result)
    # Mounts stacked on one directory are listed oldest first; the last one covers the others.
    return MountState(node.name, spec, True, listed[-1], None, result)


def mount_measurement(state: MountState) -> Measurement:
    """The ``mount`` check's measurement: what is mounted, with a value per thing the inventory states."""
    if state.mounted is None:
        return Measurement.absent("; ".join(state.problems()), (state.evidence,))
    mounted = state.mounted
    return Measurement(
        value=mounted.fstype,
        detail=f"findmnt --mountpoint {state.spec.path}: {mounted.describe()}",
        evidence=(state.evidence,),
        bounds={
            "mounted": "yes",
            "fstype": mounted.fstype,
            "options": ",".join(o if o in mounted.options else state.option_found(o) for o in state.spec.options),
        },
        extra={"mount": {"target": mounted.target, "source": mounted.source, "fstype": mounted.fstype,
                         "options": list(mounted.options)}},
    )


def _require_mount(node: NodeHandle, spec: Mount | None, settings: FioSettings, evidence: list[CommandResult]) -> MountState:
    """The mount as stated and fit for the check's I/O mode, or a MeasurementError saying why not."""
    state = check_mount(node, spec or Mount("/tmp"))
    evidence.append(state.evidence)
    if spec is not None and not state.ok:
        raise MeasurementError(
            node.name,
            f"{'; '.join(state.problems())}: nothing was measured there, since that is not the storage "
            f"the inventory names (see the mount check)",
            command=state.evidence.command,
            fix=f"mount {spec.path} on {node.name} as the inventory states, or correct storage.mounts in the inventory",
        )
    filesystem = state.filesystem
    if settings.direct and filesystem is not None and filesystem.fstype in _DIRECT_INTO_MEMORY:
        raise MeasurementError(
            node.name,
            f"{state.spec.path} is {filesystem.fstype} on {node.name}: its files live in memory (the page cache), "
            "so even O_DIRECT measures RAM, not storage",
            command=state.evidence.command,
            fix=f"mount real storage at {state.spec.path}, or set direct: false for {settings.check} in the "
            "profile to measure it as it is (buffered)",
        )
    return state


# ---------------------------------------------------------------------------
# fio


def workdir_for(node: NodeHandle, path: str | None) -> tuple[str, list[CommandResult], list[str]]:
    """A fresh directory to run fio in, under the mount (or /tmp when the inventory names none), marked
    as this run's (probes/leftovers.py); what a dead run left there is removed first.

    The directory, the commands' evidence, and what was removed, in words (empty: nothing).
    """
    run = leftovers.this_run()
    made = node.run(leftovers.listing_and_mkdir(path or "/tmp", run), timeout=15)
    now, found, directory = leftovers.parse_listing(made.stdout)
    reasons = {left.directory: why for left in found if (why := leftovers.judge(left, now, run)) is not None}
    if not reasons:
        return directory, [made], []
    dead = [left for left in found if left.directory in reasons]
    removal = node.run(leftovers.removal(dead, run), timeout=120, check=False)
    return directory, [made, removal], leftovers.removed(removal, dead, node.name, reasons)


def _fio_command(directory: str, settings: FioSettings, *, layout: bool = False, existing: bool = False,
                 fio: str = "fio") -> str:
    # The job name is the same for the layout and the read, so fio names the files alike
    # (<name>.<job>.0) and the read finds the ones another node laid out.
    parts = [
        fio,  # the node's fio, or the tenant's pinned copy (NodeHandle.tool)
        f"--name=pytest-fabric-{settings.rw}",
        f"--directory={quote(directory)}",
        f"--rw={settings.rw}",
        f"--bs={settings.block_size_bytes}",
        f"--size={settings.size_bytes}",
        f"--numjobs={settings.jobs}",
        f"--iodepth={settings.iodepth}",
        f"--ioengine={settings.engine}",
        f"--direct={1 if settings.direct else 0}",
        "--group_reporting",
        "--output-format=json",
    ]
    if layout:
        # Write the files (then fsync them: create_fsync) and stop: no I/O is measured.
        return " ".join(parts + ["--create_only=1", "--create_fsync=1"])
    if not settings.writes:
        # fio's default, written out: drop the file's pages from this node's cache at open.
        parts.append("--invalidate=1")
    if existing:
        parts.append("--allow_file_create=0")
    if settings.runtime_s:
        parts += [f"--runtime={int(settings.runtime_s)}", "--time_based"]
    if settings.writes and (settings.fsync_on_close or not settings.direct):
        # Buffered writes not yet on storage are the page cache; fsync counts them in.
        parts.append("--end_fsync=1")
    return " ".join(parts)


def _refused_direct(result: CommandResult) -> bool:
    text = (result.stderr + result.stdout).lower()
    return "o_direct" in text or "invalid argument" in text


def run_fio(
    node: NodeHandle, directory: str, settings: FioSettings, timeout: float, *, layout: bool = False, existing: bool = False
) -> tuple[fio.FioResult, CommandResult]:
    """Run fio once; a filesystem that refuses O_DIRECT is an error that says how to measure it anyway."""
    command = _fio_command(directory, settings, layout=layout, existing=existing, fio=node.tool("fio"))
    result = node.run(command, timeout=timeout, check=False)
    if result.exit_code != 0 and settings.direct and _refused_direct(result):
        said = "; ".join(line.strip() for line in (result.stderr or result.stdout).splitlines() if "fio:" in line)[:400]
        raise MeasurementError(
            node.name,
            f"the filesystem under {directory} refused O_DIRECT ({said or 'Invalid argument'}); a buffered run "
            "would measure the page cache, so none was made",
            command=result.command,
            fix=f"set direct: false for {settings.check} in the profile to measure this filesystem buffered "
            "(writes then end with fsync), or test a mount that supports O_DIRECT",
        )
    if result.exit_code == 127:
        raise ToolMissing(node.name, "fio", command=result.command, package="fio")
    if result.exit_code != 0 and not result.stdout.strip().startswith("{"):
        raise CommandFailed(result, fix=f"run the fio command by hand on {node.name}; check free space and permissions")
    return parse_or_raise(fio.parse_json, result), result


def _timeout(settings: FioSettings, writers: int = 1) -> float:
    # Generous: laying out the files plus the run itself at a pessimistic 50 MB/s
    # per writer sharing the storage, plus any time-based runtime.
    return 60 + 2 * settings.size_bytes * settings.jobs * writers / 50e6 + (settings.runtime_s or 0)


def _remove(node: NodeHandle, directory: str) -> CommandResult:
    # A clean-up: it still runs once the run stops (Ctrl-C), so an interrupted check leaves no files.
    return node.run(fill("rm -rf -- {directory}", directory=directory), timeout=120, check=False, cleanup=True)


@dataclass
class _Run:
    parsed: fio.FioResult
    evidence: list[CommandResult]
    mount: MountState
    how_read: str = ""  # for reads: who laid the file out and what kept the cache out
    read_from: dict[str, Any] | None = None
    together: str = ""  # measured together: with whom, over which window
    removed: list[str] = dataclasses.field(default_factory=list)  # what dead runs left, removed first
    #: the storage counters read just before and just after fio ran (settings.witness)
    witnessed: tuple[StorageBytes, StorageBytes] | None = None


@dataclass
class _Prepared:
    """A node ready to run fio: its mount checked, its directory made (and, to read, its files laid out)."""

    node: NodeHandle
    directory: str
    owner: NodeHandle  # who made the directory, and removes it
    mount: MountState
    evidence: list[CommandResult]
    how_read: str = ""
    read_from: dict[str, Any] | None = None
    removed: list[str] = dataclasses.field(default_factory=list)  # what dead runs left, removed first


def _prepare(node: NodeHandle, spec: Mount | None, settings: FioSettings, peers: Sequence[NodeHandle]) -> _Prepared:
    """The mount checked and a fresh directory made; to read, the files laid out where ``node`` cannot
    have written or cached them (see the module doc). Its directory is removed if this fails."""
    evidence: list[CommandResult] = []
    state = _require_mount(node, spec, settings, evidence)
    owner = node if settings.writes else _layout_node(node, spec, state, peers, evidence)
    directory, made, removed = workdir_for(owner, spec.path if spec else None)
    evidence += made
    prepared = _Prepared(node, directory, owner, state, evidence, removed=removed)
    if settings.writes:
        return prepared
    try:
        _lay_out(prepared, spec, settings)
    except BaseException:
        evidence.append(_remove(owner, directory))
        raise
    return prepared


def _lay_out(prepared: _Prepared, spec: Mount | None, settings: FioSettings) -> None:
    node, writer, directory, state, evidence = (prepared.node, prepared.owner, prepared.directory, prepared.mount,
                                                prepared.evidence)
    _, laid = run_fio(writer, directory, settings, _timeout(settings), layout=True)
    evidence.append(laid)
    if writer is not node:
        how = f"files laid out by {writer.name} on the shared mount; {node.name} never wrote them"
        read_from: dict[str, Any] = {"laid_out_by": writer.name, "cache": "other node"}
    elif state.filesystem is not None and state.filesystem.fstype in MEMORY_FSTYPES:
        # Only with direct: false (checked above): the files are memory, there is no cache to drop.
        how = f"files laid out by {node.name} itself on {state.filesystem.fstype}, which is memory: no cache to drop"
        read_from = {"laid_out_by": node.name, "cache": "memory filesystem"}
    else:
        dropped = node.run(fill("sync -f {directory} && ", directory=directory) + _DROP_CACHES, timeout=120, check=False)
        evidence.append(dropped)
        if dropped.ok:
            how = f"files laid out by {node.name} itself, then its page cache dropped (sync; {_DROP_CACHES})"
            read_from = {"laid_out_by": node.name, "cache": "dropped"}
        else:
            why = (dropped.stderr or dropped.stdout).strip().splitlines()
            how = (
                f"files laid out by {node.name} itself; dropping its page cache was refused "
                f"({why[-1] if why else f'exit {dropped.exit_code}'}: not root?), so only fio's invalidate=1 "
                "(posix_fadvise DONTNEED of the file at open) kept them out of the cache"
            )
            read_from = {"laid_out_by": node.name, "cache": "fio invalidate=1"}
        if spec is not None and spec.is_shared(state.mounted.fstype if state.mounted else None):
            how += "; no other node has this shared mount as stated, so none could lay the files out"
    evidence.append(_files_present(node, writer, directory, settings))
    prepared.how_read, prepared.read_from = how, read_from


def _run_prepared(prepared: _Prepared, settings: FioSettings, timeout: float) -> _Run:
    before = storage_bytes(prepared.node, prepared.directory) if settings.witness else None
    parsed, result = run_fio(prepared.node, prepared.directory, settings, timeout, existing=not settings.writes)
    witnessed = None
    if before is not None:
        witnessed = (before, storage_bytes(prepared.node, prepared.directory))
        # before fio's own result: the figures' errors name evidence[-2] as the fio command
        prepared.evidence += [r.evidence for r in witnessed if r.evidence is not None]
    prepared.evidence.append(result)
    return _Run(parsed, prepared.evidence, prepared.mount, prepared.how_read, prepared.read_from,
                removed=prepared.removed, witnessed=witnessed)


def _write_in(node: NodeHandle, spec: Mount | None, settings: FioSettings) -> _Run:
    """fio writing in a fresh directory under the mount (removed afterwards, whatever happens)."""
    return _alone(node, spec, settings, ())


def _read_in(node: NodeHandle, spec: Mount | None, settings: FioSettings, peers: Sequence[NodeHandle]) -> _Run:
    """fio reading files ``node`` did not just write and cannot have cached (see the module doc)."""
    return _alone(node, spec, settings, peers)


def _alone(node: NodeHandle, spec: Mount | None, settings: FioSettings, peers: Sequence[NodeHandle]) -> _Run:
    prepared = _prepare(node, spec, settings, peers)
    try:
        return _run_prepared(prepared, settings, _timeout(settings))
    finally:
        prepared.evidence.append(_remove(prepared.owner, prepared.directory))


def _layout_node(
    node: NodeHandle, spec: Mount | None, state: MountState, peers: Sequence[NodeHandle], evidence: list[CommandResult]
) -> NodeHandle:
    """Who lays the file out: on a shared mount the first reachable peer that has it as stated, else the node itself.

    A peer that cannot be reached is passed over: its outage is its own, and must not become an
    error of the node that reads (and so a node sent back for another node's fault).
    """
    if spec is None or not spec.is_shared(state.mounted.fstype if state.mounted else None):
        return node
    for peer in peers:
        if peer.name == node.name:
            continue
        try:
            peer_state = check_mount(peer, spec)
        except TransportError:
            continue  # unreachable, or its session failed: the next peer lays the files out
        evidence.append(peer_state.evidence)
        if peer_state.ok:
            return peer
    return node


def _files_present(node: NodeHandle, writer: NodeHandle, directory: str, settings: FioSettings) -> CommandResult:
    """The laid-out files as the reader sees them before it reads (evidence that it did not write them)."""
    pattern = quote(directory) + "/" + quote(f"pytest-fabric-{settings.rw}") + ".*"
    result = node.run(f"stat -c '%n %s bytes' -- {pattern}", timeout=15, check=False)
    if not result.ok:
        raise MeasurementError(
            node.name,
            f"the files {writer.name} laid out in {directory} are not there on {node.name}: the mount is not "
            "shared between them, so nothing was read",
            command=result.command,
            fix="mount the shared filesystem on both nodes, or write shared: false for this mount in the inventory",
        )
    return result


def _detail(what: str, label: str, settings: FioSettings, run: _Run, *, per_job: bool = True) -> str:
    size = settings.size_bytes / 2**20
    amount = f"{settings.jobs} job(s) x {size:.0f} MiB" if per_job else f"{settings.jobs * size:.0f} MiB over {settings.jobs} writer(s)"
    detail = f"fio {what} on {label}, {amount}, bs {settings.block_size_bytes // 1024} KiB, {_engine_text(settings)}"
    if settings.runtime_s:
        detail += f", {settings.runtime_s:g} s time-based (looping over the files)"
    detail += ", direct (O_DIRECT)" if settings.direct else ", buffered (direct: false)"
    if settings.writes and (settings.fsync_on_close or not settings.direct):
        detail += ", ended by fsync"
    if run.how_read:
        detail += f"; {run.how_read}"
    if run.together:
        detail += f"; {run.together}"
    if run.removed:
        detail += "; before measuring, " + "; ".join(run.removed)
    return detail


def _engine_text(settings: FioSettings) -> str:
    if settings.iodepth > 1:
        return f"{settings.engine} iodepth {settings.iodepth}"
    return f"{settings.engine}, one request at a time"


def _label(spec: Mount | None, run: _Run) -> str:
    if spec is None:
        return "/tmp (no mounts in the inventory)"
    fs = run.mount.mounted
    return f"{spec.path} ({fs.fstype})" if fs else spec.path


def _extra(parsed: fio.FioResult, settings: FioSettings, run: _Run, **more: Any) -> dict[str, Any]:
    extra: dict[str, Any] = {"tool_versions": {"fio": parsed.version} if parsed.version else {}, "io": settings.io_mode}
    fs = run.mount.filesystem
    if fs is not None:
        extra["filesystem"] = {"target": fs.target, "fstype": fs.fstype, "source": fs.source}
    if run.read_from is not None:
        extra["read_from"] = run.read_from
    if run.removed:
        extra["leftovers_removed"] = run.removed
    extra.update(more)
    return extra


def _corroborated(node: NodeHandle, settings: FioSettings, run: _Run, direction: str, measured: Measurement) -> Measurement:
    """``measured`` with fio's own figures judged against each other, job by job, and the bytes of all its
    jobs against the storage's counters (judge/corroboration.py)."""
    if not settings.corroborate and run.witnessed is None:
        return measured
    found = [corroboration.fio_internal(node.name, getattr(job, direction), f"{job.name} {direction}")
             for job in run.parsed.jobs if getattr(job, direction).active] if settings.corroborate else []
    if run.witnessed is not None:
        before, after = run.witnessed
        claimed = sum(getattr(job, direction).io_bytes for job in run.parsed.jobs)
        found.append(corroboration.storage_witness(node.name, direction, claimed, before.counters, after.counters,
                                                   why=before.problem or after.problem))
    return dataclasses.replace(
        measured, detail=f"{measured.detail}; {corroboration.summary(found)}",
        missing=corroboration.failure(found),
        extra={**measured.extra, "corroborations": [f.to_dict() for f in found]},
    )


def sequential(node: NodeHandle, spec: Mount | None, settings: FioSettings, peers: Sequence[NodeHandle] = ()) -> Measurement:
    """Sequential read or write bandwidth under the mount; reads read files ``node`` did not just write."""
    run = _write_in(node, spec, settings) if settings.writes else _read_in(node, spec, settings, peers)
    return _sequential_figure(node, spec, settings, run)


def _sequential_figure(node: NodeHandle, spec: Mount | None, settings: FioSettings, run: _Run) -> Measurement:
    io = run.parsed.write if settings.writes else run.parsed.read
    if io.bw_bytes_per_s <= 0:
        raise MeasurementError(node.name, f"fio reported no {settings.rw} throughput", command=run.evidence[-2].command)
    return _corroborated(node, settings, run, "write" if settings.writes else "read", Measurement(
        value=bandwidth(io.bw_bytes_per_s, "B/s"),
        detail=_detail(settings.rw, _label(spec, run), settings, run),
        evidence=tuple(run.evidence),
        extra=_extra(run.parsed, settings, run, iops=io.iops),
    ))


def random_read(node: NodeHandle, spec: Mount | None, settings: FioSettings, peers: Sequence[NodeHandle] = ()) -> Measurement:
    """Random-read IOPS (a count) under the mount: fio randread, libaio at the spec's queue depth."""
    return _random_read_figure(node, spec, settings, _read_in(node, spec, settings, peers))


def _random_read_figure(node: NodeHandle, spec: Mount | None, settings: FioSettings, run: _Run) -> Measurement:
    io = run.parsed.read
    if io.iops <= 0:
        raise MeasurementError(node.name, "fio reported no random-read I/O", command=run.evidence[-2].command)
    return _corroborated(node, settings, run, "read", Measurement(
        value=parse_quantity(round(io.iops)),
        detail=_detail(settings.rw, _label(spec, run), settings, run),
        evidence=tuple(run.evidence),
        extra=_extra(run.parsed, settings, run, bandwidth_bytes_per_s=io.bw_bytes_per_s),
    ))


def checkpoint_write(node: NodeHandle, spec: Mount | None, settings: FioSettings) -> Measurement:
    """``jobs`` writers at once, each writing its share and ending with fsync: bandwidth including the flush.

    fio counts the closing fsync (``end_fsync=1``) in each job's runtime, so a filesystem
    that acknowledges writes into RAM and is slow to make them durable cannot hide it.
    """
    if settings.rw != "write" or not settings.fsync_on_close:
        raise ValueError("checkpoint_write needs rw='write' and fsync_on_close=True")
    return _checkpoint_figure(node, spec, settings, _write_in(node, spec, settings))


def _checkpoint_figure(node: NodeHandle, spec: Mount | None, settings: FioSettings, run: _Run) -> Measurement:
    io = run.parsed.write
    if io.bw_bytes_per_s <= 0:
        raise MeasurementError(node.name, "fio reported no write throughput", command=run.evidence[-2].command)
    return _corroborated(node, settings, run, "write", Measurement(
        value=bandwidth(io.bw_bytes_per_s, "B/s"),
        detail=_detail("write + fsync", _label(spec, run), settings, run, per_job=False),
        evidence=tuple(run.evidence),
        extra=_extra(run.parsed, settings, run, writers=settings.jobs),
    ))


# ---------------------------------------------------------------------------
# Every node at once on a shared mount


#: what a per-node figure of a together run is, by check: how its fio result becomes a Measurement
_FIGURES: dict[str, Callable[[NodeHandle, Mount | None, FioSettings, _Run], Measurement]] = {
    "sequential": _sequential_figure,
    "random_read": _random_read_figure,
    "checkpoint": _checkpoint_figure,
}


def together(
    nodes: Sequence[NodeHandle],
    spec: Mount,
    settings: FioSettings,
    figure: str,
    peers_of: Callable[[NodeHandle], Sequence[NodeHandle]],
    at_once: int,
) -> dict[str, Measurement | Exception]:
    """Each node's figure on the shared mount ``spec`` with the others running too (measured: together).

    Nodes go ``at_once`` at a time (the wave under ``--fabric-fanout``). In each group every node
    is prepared first (mount checked, directory made, a read's files laid out by a peer), then all
    of them launch fio at once, time-based for ``runtime_s``, then their directories are removed:
    each node's bytes over its own fio runtime is then its share over the same window as the others'.
    Size-based, a node that finished early would leave the mount to the rest, whose figures would
    claim more than the share they had while all ran; preparing in the same window as another
    node's run would load the mount with lay-outs. ``figure``: sequential, random_read or checkpoint.
    A node that fails gets its own error; the others are measured without it.
    """
    if not settings.runtime_s:
        raise ValueError("a together run is time-based: give runtime_s")
    to_figure = _FIGURES[figure]
    out: dict[str, Measurement | Exception] = {}
    step = max(1, at_once)
    for first in range(0, len(nodes), step):
        out.update(_together_group(list(nodes[first:first + step]), spec, settings, to_figure, peers_of))
    return out


def _together_group(
    nodes: list[NodeHandle],
    spec: Mount,
    settings: FioSettings,
    to_figure: Callable[[NodeHandle, Mount | None, FioSettings, _Run], Measurement],
    peers_of: Callable[[NodeHandle], Sequence[NodeHandle]],
) -> dict[str, Measurement | Exception]:
    def prepare(node: NodeHandle) -> _Prepared | Exception:
        try:
            return _prepare(node, spec, settings, peers_of(node))
        except Exception as exc:  # this node's own error; the others go on without it
            return exc

    out: dict[str, Measurement | Exception] = {}
    ready: list[_Prepared] = []
    for node, done in zip(nodes, fan_out(nodes, prepare, ALL_AT_ONCE)):
        if isinstance(done, Exception):
            out[node.name] = done
        else:
            ready.append(done)
    timeout = _timeout(settings, writers=len(ready))

    def launch(prepared: _Prepared) -> tuple[_Run | Exception, float]:
        launched = time.monotonic()
        try:
            return _run_prepared(prepared, settings, timeout), launched
        except Exception as exc:
            return exc, launched

    runs: list[tuple[_Run | Exception, float]] = []
    try:
        # Every prepared node at once, whatever --fabric-fanout: the group is already within it.
        runs = fan_out(ready, launch, ALL_AT_ONCE)
    finally:
        for prepared, removed in zip(ready, fan_out(ready, lambda p: _remove(p.owner, p.directory), ALL_AT_ONCE)):
            prepared.evidence.append(removed)
    launches = [launched for _, launched in runs]
    spread = max(launches) - min(launches) if launches else 0.0
    for prepared, (run, _) in zip(ready, runs):
        name = prepared.node.name
        if isinstance(run, Exception):
            out[name] = run
            continue
        others = len(ready) - 1
        run.together = (
            f"started together with {others} other node(s) on the shared mount {spec.path} (launched within "
            f"{spread:.2f} s), each for the same {settings.runtime_s:g} s: the figure is this node's bytes over its "
            "own fio runtime, the same window as theirs, so its share of what the mount gave them all"
            if others else f"the only node of its group on the shared mount {spec.path}, so its figure is no share"
        )
        if settings.writes and (settings.fsync_on_close or not settings.direct):
            # The window is the writing; each node's closing fsync is its own, counted in its runtime.
            run.together += " (the closing fsync, counted in, is each node's own after the window)"
        try:
            measured = to_figure(prepared.node, spec, settings, run)
        except Exception as exc:
            out[name] = exc
            continue
        out[name] = dataclasses.replace(measured, extra={
            **measured.extra,
            "together": {"nodes": len(ready), "launch_spread_s": round(spread, 3), "runtime_s": settings.runtime_s},
        })
    return out



def shared_mounts(node: NodeHandle, specs: Sequence[Mount]) -> tuple[list[Mount], list[str]]:
    """The mounts every node sees as one (by ``shared:``, the stated type, or the type mounted on ``node``),
    and why each other one is not."""
    shared: list[Mount] = []
    reasons: list[str] = []
    for spec in specs:
        fstype = spec.fstype
        if spec.shared is None and fstype is None:
            state = check_mount(node, spec)
            fstype = state.mounted.fstype if state.mounted else None
            if fstype is None:
                reasons.append(f"{spec.path}: {'; '.join(state.problems())}")
                continue
        if spec.is_shared(fstype):
            shared.append(spec)
        elif spec.shared is False:
            reasons.append(f"{spec.path} is node-local (shared: false)")
        else:
            reasons.append(f"{spec.path} is {fstype}, a node-local filesystem")
    return shared, reasons


@dataclass(frozen=True)
class WriterRun:
    """One node's part of an aggregate write: what fio says it wrote, and when, by this process's clock."""

    node: str
    io_bytes: int
    fio_runtime_s: float  # fio's own: the write phase of the job(s)
    launched_s: float  # time.monotonic() as its command was sent
    returned_s: float  # as its result came back

    @property
    def bytes_per_s(self) -> float:
        """The node's own rate, over its own runtime: reported, never added up."""
        return self.io_bytes / self.fio_runtime_s if self.fio_runtime_s > 0 else 0.0


@dataclass(frozen=True)
class SharedFigure:
    """What the shared filesystem took from all the nodes writing at once."""

    total_bytes: int
    span_s: float  # from the first node's start to the last node's end (see shared_figure)
    fio_span_s: float  # the longest any node's fio ran: the span is at least that
    sum_of_rates: float  # the nodes' own rates added up: what the figure is not

    @property
    def bytes_per_s(self) -> float:
        return self.total_bytes / self.span_s


def shared_figure(runs: Sequence[WriterRun]) -> SharedFigure:
    """All the bytes written, over the span from the earliest start to the latest end.

    The nodes are launched together, so the span runs from the first launch to the last
    result back; each node's fio ran somewhere inside its own launch-to-return interval, so
    this span holds every byte, and the figure is never more than the filesystem did. (It is
    at least the longest fio runtime, should the clock say less.) Adding the nodes' own rates
    instead counts a node that finished early as writing at its rate for the whole span, while
    the others ran faster in the bandwidth it left: more than the filesystem did.
    """
    if not runs:
        raise ValueError("no writer runs")
    fio_span = max(r.fio_runtime_s for r in runs)
    span = max(max(r.returned_s for r in runs) - min(r.launched_s for r in runs), fio_span)
    if span <= 0:
        raise ValueError("the writers ran for no time")
    return SharedFigure(
        total_bytes=sum(r.io_bytes for r in runs),
        span_s=span,
        fio_span_s=fio_span,
        sum_of_rates=sum(r.bytes_per_s for r in runs),
    )


def aggregate_write(nodes: list[NodeHandle], specs: list[Mount], settings: FioSettings) -> Measurement:
    """Every node writes to each shared mount at once for ``runtime_s`` (time-based); value: the bytes
    they wrote together over the span from the first start to the last end (:func:`shared_figure`).

    With several mounts each is measured in turn and the value is the lowest
    aggregate (the weakest shared filesystem decides); the detail lists each.
    """
    if not settings.runtime_s:
        raise ValueError("aggregate_write runs time-based: give runtime_s")
    evidence: list[CommandResult] = []
    figures: dict[str, Quantity] = {}
    shared: dict[str, SharedFigure] = {}
    per_node: dict[str, dict[str, float]] = {}
    removed: list[str] = []  # what dead runs left under the mounts, removed first
    for spec in specs:
        runs = _aggregate_one(nodes, spec, settings, evidence, removed)
        shared[spec.path] = shared_figure(runs)
        per_node[spec.path] = {r.node: r.bytes_per_s for r in runs}
        figures[spec.path] = bandwidth(shared[spec.path].bytes_per_s, "B/s")
    worst = min(figures, key=lambda m: figures[m])
    parts = []
    for mount, total in figures.items():
        figure = shared[mount]
        slowest = min(per_node[mount], key=lambda n: per_node[mount][n])
        parts.append(
            f"{mount}: {total.display('GB/s')} = {figure.total_bytes / 1e9:.3g} GB written by {len(nodes)} nodes over "
            f"{figure.span_s:.1f} s from the first launch to the last return (fio itself ran up to "
            f"{figure.fio_span_s:.1f} s; slowest {slowest} {bandwidth(per_node[mount][slowest], 'B/s').display('GB/s')}; "
            f"the nodes' own rates add up to {bandwidth(figure.sum_of_rates, 'B/s').display('GB/s')}, which is not "
            "the figure)"
        )
    mode = "direct (O_DIRECT)" if settings.direct else "buffered (direct: false), ended by fsync"
    detail = (
        f"fio write, all nodes started together, each {settings.runtime_s:g} s time-based over "
        f"{settings.size_bytes / 2**20:.0f} MiB x {settings.jobs} job(s), bs {settings.block_size_bytes // 1024} KiB, "
        f"{_engine_text(settings)}, {mode}; judged by all bytes written over the span from the first start to the "
        "last end, never by adding the nodes' rates; " + "; ".join(parts)
    )
    if removed:
        detail += "; before measuring, " + "; ".join(removed)
    return Measurement(
        value=figures[worst],
        detail=detail,
        evidence=tuple(evidence),
        samples=tuple(figures.values()),
        extra={
            "per_node_bytes_per_s": per_node,
            "io": settings.io_mode,
            **({"leftovers_removed": removed} if removed else {}),
            "shared": {
                mount: {"bytes_per_s": round(f.bytes_per_s, 1), "total_bytes": f.total_bytes,
                        "span_s": round(f.span_s, 3), "fio_span_s": round(f.fio_span_s, 3),
                        "sum_of_rates_bytes_per_s": round(f.sum_of_rates, 1)}
                for mount, f in shared.items()
            },
        },
    )


def _aggregate_one(nodes: list[NodeHandle], spec: Mount, settings: FioSettings, evidence: list[CommandResult],
                   removed: list[str]) -> list[WriterRun]:
    """Each node's part of one mount's aggregate, all nodes writing at once; an error if a node lacks the mount.

    Every node writes at the same moment, whatever ``--fabric-fanout``: fewer at once would
    not be the aggregate (:data:`~pytest_fabric.run.batches.ALL_AT_ONCE`). Its preparation and
    clean-up run as wide, so the writes start together rather than staggered by each node's
    round trips, and no node's files wait for a slot to be removed.
    """

    def prepare(node: NodeHandle) -> tuple[list[CommandResult], str | None, list[str]] | Exception:
        try:
            return _prepare_shared(node, spec, settings)
        except Exception as exc:  # the first is raised below, after every node's evidence is in
            return exc

    # Mount checks and directories first, on every node.
    prepared = fan_out(nodes, prepare, ALL_AT_ONCE)
    directories: dict[str, str] = {}
    failure: BaseException | None = None
    for node, done in zip(nodes, prepared):
        if isinstance(done, Exception):
            failure = failure or done
            continue
        node_evidence, directory, notes = done
        evidence += node_evidence
        removed += notes
        if directory is not None:
            directories[node.name] = directory
    runs: list[tuple[fio.FioResult, CommandResult, float, float]] = []
    try:
        if failure is not None:  # a node without the mount, or unreachable: no aggregate at all
            raise failure
        timeout = _timeout(settings, writers=len(nodes))
        runs = fan_out(nodes, lambda n: _timed_write(n, directories[n.name], settings, timeout), ALL_AT_ONCE)
    finally:
        evidence += fan_out([n for n in nodes if n.name in directories], lambda n: _remove(n, directories[n.name]),
                            ALL_AT_ONCE)
    out: list[WriterRun] = []
    for node, (parsed, result, launched, returned) in zip(nodes, runs):
        evidence.append(result)
        write = parsed.write
        if write.io_bytes <= 0 or not write.runtime_ms:
            raise MeasurementError(node.name, "fio reported no bytes written", command=result.command)
        out.append(WriterRun(node.name, write.io_bytes, write.runtime_ms / 1000, launched, returned))
    return out


def _timed_write(
    node: NodeHandle, directory: str, settings: FioSettings, timeout: float
) -> tuple[fio.FioResult, CommandResult, float, float]:
    """run_fio, and when (time.monotonic()) its command went out and its result came back."""
    launched = time.monotonic()
    parsed, result = run_fio(node, directory, settings, timeout)
    return parsed, result, launched, time.monotonic()


def _prepare_shared(node: NodeHandle, spec: Mount, settings: FioSettings) -> tuple[list[CommandResult], str | None, list[str]]:
    evidence: list[CommandResult] = []
    _require_mount(node, spec, settings, evidence)
    directory, made, removed = workdir_for(node, spec.path)
    evidence += made
    return evidence, directory, removed
