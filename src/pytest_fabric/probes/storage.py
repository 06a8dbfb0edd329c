"""Storage throughput on a node's mount with fio (JSON output).

Each run works in a fresh directory under the mount (``mktemp -d``) and removes
it afterwards, so a failed or interrupted check leaves no multi-GiB files on a
shared filesystem.  With ``direct`` (the default) fio uses O_DIRECT so the page
cache does not flatter the result; a filesystem that refuses O_DIRECT (tmpfs)
is measured buffered and the detail says so.

Four measurements share that machinery: ``sequential`` (read or write),
``random_read`` (IOPS at a queue depth), ``checkpoint_write`` (a large
sequential write ended by fsync, the way a training job saves a checkpoint)
and ``aggregate_write`` (every node writes to one shared mount at once).
"""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..cluster import NodeHandle
from ..parsers import fio
from ..transport.base import CommandFailed, CommandResult
from ..units import Quantity, bandwidth, parse_quantity
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = [
    "FioSettings",
    "MountInfo",
    "aggregate_write",
    "checkpoint_write",
    "find_mount",
    "random_read",
    "sequential",
    "workdir_for",
]


@dataclass(frozen=True)
class FioSettings:
    rw: str  # read | write | randread
    size_bytes: int
    block_size_bytes: int
    jobs: int = 1
    direct: bool = True
    iodepth: int = 1
    runtime_s: float | None = None
    fsync_on_close: bool = False


@dataclass(frozen=True)
class MountInfo:
    path: str
    exists: bool
    fstype: str | None
    options: str | None
    evidence: CommandResult


def find_mount(node: NodeHandle, path: str) -> MountInfo:
    """Whether ``path`` exists on the node and which filesystem it lives on."""
    quoted = shlex.quote(path)
    result = node.run(
        f"test -d {quoted} || {{ echo missing; exit 0; }}; findmnt -n -o FSTYPE,OPTIONS --target {quoted} || df -PT {quoted}",
        timeout=15,
        check=False,
    )
    out = result.stdout.strip()
    if out == "missing":
        return MountInfo(path, False, None, None, result)
    fields = out.splitlines()[-1].split() if out else []
    fstype = fields[0] if fields else None
    options = fields[1] if len(fields) > 1 else None
    return MountInfo(path, True, fstype, options, result)


def workdir_for(node: NodeHandle, path: str | None) -> tuple[str, CommandResult]:
    """A fresh directory to run fio in: under the mount, or under /tmp when the inventory names none."""
    parent = shlex.quote(path or "/tmp")
    result = node.run(f"mktemp -d {parent}/pytest-fabric.XXXXXX", timeout=15)
    return result.stdout.strip(), result


def _fio_command(directory: str, settings: FioSettings, direct: bool) -> str:
    parts = [
        "fio",
        f"--name=pytest-fabric-{settings.rw}",
        f"--directory={shlex.quote(directory)}",
        f"--rw={settings.rw}",
        f"--bs={settings.block_size_bytes}",
        f"--size={settings.size_bytes}",
        f"--numjobs={settings.jobs}",
        f"--iodepth={settings.iodepth}",
        "--ioengine=libaio" if settings.iodepth > 1 else "--ioengine=psync",
        f"--direct={1 if direct else 0}",
        "--group_reporting",
        "--output-format=json",
    ]
    if settings.runtime_s:
        parts += [f"--runtime={int(settings.runtime_s)}", "--time_based"]
    if settings.fsync_on_close:
        parts.append("--end_fsync=1")
    return " ".join(parts)


def _refused_direct(result: CommandResult) -> bool:
    text = (result.stderr + result.stdout).lower()
    return "o_direct" in text or "invalid argument" in text


def run_fio(node: NodeHandle, directory: str, settings: FioSettings, timeout: float) -> tuple[fio.FioResult, list[CommandResult], str]:
    """Run fio; on a filesystem that refuses O_DIRECT, run again buffered and say so."""
    evidence = []
    note = ""
    result = node.run(_fio_command(directory, settings, settings.direct), timeout=timeout, check=False)
    evidence.append(result)
    if result.exit_code != 0 and settings.direct and _refused_direct(result):
        note = "the filesystem refused O_DIRECT, so this was measured through the page cache"
        result = node.run(_fio_command(directory, settings, False), timeout=timeout, check=False)
        evidence.append(result)
    if result.exit_code != 0 and not result.stdout.strip().startswith("{"):
        raise CommandFailed(result, fix=f"run the fio command by hand on {node.name}; check free space and permissions")
    parsed = parse_or_raise(fio.parse_json, result)
    return parsed, evidence, note


def _timeout(settings: FioSettings, writers: int = 1) -> float:
    # Generous: laying out the files plus the run itself at a pessimistic 50 MB/s
    # per writer sharing the storage, plus any time-based runtime.
    return 60 + 2 * settings.size_bytes * settings.jobs * writers / 50e6 + (settings.runtime_s or 0)


def _prepare(node: NodeHandle, mount: str | None, evidence: list[CommandResult]) -> str | Measurement:
    """A fresh work directory under ``mount``, or an absent measurement when the mount is not there."""
    if mount is not None:
        info = find_mount(node, mount)
        evidence.append(info.evidence)
        if not info.exists:
            return Measurement.absent(f"{mount} does not exist on {node.name}", tuple(evidence))
    directory, made = workdir_for(node, mount)
    evidence.append(made)
    return directory


def _remove(node: NodeHandle, directory: str) -> CommandResult:
    return node.run(f"rm -rf -- {shlex.quote(directory)}", timeout=120, check=False)


def _fio_in(node: NodeHandle, mount: str | None, settings: FioSettings) -> tuple[fio.FioResult, list[CommandResult], str] | Measurement:
    """fio in a fresh directory under ``mount`` (removed afterwards, whatever happens)."""
    evidence: list[CommandResult] = []
    directory = _prepare(node, mount, evidence)
    if isinstance(directory, Measurement):
        return directory
    try:
        parsed, runs, note = run_fio(node, directory, settings, _timeout(settings))
        evidence += runs
    finally:
        evidence.append(_remove(node, directory))
    return parsed, evidence, note


def _direction(parsed: fio.FioResult, settings: FioSettings) -> fio.FioIo:
    return parsed.write if settings.rw in ("write", "randwrite") else parsed.read


def _detail(what: str, label: str, settings: FioSettings, note: str) -> str:
    detail = (
        f"fio {what} on {label}, {settings.jobs} job(s) x {settings.size_bytes / 2**20:.0f} MiB, "
        f"bs {settings.block_size_bytes // 1024} KiB"
    )
    if settings.iodepth > 1:
        detail += f", iodepth {settings.iodepth}"
    if settings.runtime_s:
        detail += f", {settings.runtime_s:g} s"
    detail += f", direct={'yes' if settings.direct and not note else 'no'}"
    return f"{detail}; {note}" if note else detail


def _label(mount: str | None) -> str:
    return mount or "/tmp (no mounts in the inventory)"


def _versions(parsed: fio.FioResult) -> dict[str, str]:
    return {"fio": parsed.version} if parsed.version else {}


def sequential(node: NodeHandle, mount: str | None, settings: FioSettings) -> Measurement:
    """Sequential read or write bandwidth in a fresh directory under ``mount``."""
    ran = _fio_in(node, mount, settings)
    if isinstance(ran, Measurement):
        return ran
    parsed, evidence, note = ran
    io = _direction(parsed, settings)
    if io.bw_bytes_per_s <= 0:
        raise MeasurementError(node.name, f"fio reported no {settings.rw} throughput", command=evidence[-2].command)
    return Measurement(
        value=bandwidth(io.bw_bytes_per_s, "B/s"),
        detail=_detail(settings.rw, _label(mount), settings, note),
        evidence=tuple(evidence),
        extra={"tool_versions": _versions(parsed), "iops": io.iops},
    )


def random_read(node: NodeHandle, mount: str | None, settings: FioSettings) -> Measurement:
    """Random-read IOPS (a count) under ``mount``: fio randread, libaio at the spec's queue depth."""
    ran = _fio_in(node, mount, settings)
    if isinstance(ran, Measurement):
        return ran
    parsed, evidence, note = ran
    io = parsed.read
    if io.iops <= 0:
        raise MeasurementError(node.name, "fio reported no random-read I/O", command=evidence[-2].command)
    return Measurement(
        value=parse_quantity(round(io.iops)),
        detail=_detail(settings.rw, _label(mount), settings, note),
        evidence=tuple(evidence),
        extra={"tool_versions": _versions(parsed), "bandwidth_bytes_per_s": io.bw_bytes_per_s},
    )


def checkpoint_write(node: NodeHandle, mount: str | None, settings: FioSettings) -> Measurement:
    """Write ``size`` sequentially, then fsync: bandwidth including the flush (fio ``--end_fsync=1``).

    fio counts the closing fsync in the job's runtime, so a filesystem that
    acknowledges writes into RAM and is slow to make them durable cannot hide it.
    """
    if settings.rw != "write" or not settings.fsync_on_close:
        raise ValueError("checkpoint_write needs rw='write' and fsync_on_close=True")
    ran = _fio_in(node, mount, settings)
    if isinstance(ran, Measurement):
        return ran
    parsed, evidence, note = ran
    io = parsed.write
    if io.bw_bytes_per_s <= 0:
        raise MeasurementError(node.name, "fio reported no write throughput", command=evidence[-2].command)
    return Measurement(
        value=bandwidth(io.bw_bytes_per_s, "B/s"),
        detail=_detail("write + fsync", _label(mount), settings, note),
        evidence=tuple(evidence),
        extra={"tool_versions": _versions(parsed)},
    )


def aggregate_write(nodes: list[NodeHandle], mounts: list[str], settings: FioSettings) -> Measurement:
    """Every node writes to each shared mount at once; value: the sum of the nodes' bandwidths.

    With several mounts each is measured in turn and the value is the lowest
    aggregate (the weakest shared filesystem decides); the detail lists each.
    """
    evidence: list[CommandResult] = []
    figures: dict[str, Quantity] = {}
    per_node: dict[str, dict[str, float]] = {}
    for mount in mounts:
        result = _aggregate_one(nodes, mount, settings, evidence)
        if isinstance(result, Measurement):
            return result
        per_node[mount] = result
        figures[mount] = bandwidth(sum(result.values()), "B/s")
    worst = min(figures, key=lambda m: figures[m])
    parts = []
    for mount, total in figures.items():
        slowest = min(per_node[mount], key=lambda n: per_node[mount][n])
        parts.append(
            f"{mount}: {total.display('GB/s')} from {len(nodes)} nodes at once "
            f"(slowest {slowest} {bandwidth(per_node[mount][slowest], 'B/s').display('GB/s')})"
        )
    detail = f"fio write, {settings.size_bytes / 2**20:.0f} MiB per node; " + "; ".join(parts)
    return Measurement(
        value=figures[worst],
        detail=detail,
        evidence=tuple(evidence),
        samples=tuple(figures.values()),
        extra={"per_node_bytes_per_s": per_node},
    )


def _aggregate_one(
    nodes: list[NodeHandle], mount: str, settings: FioSettings, evidence: list[CommandResult]
) -> dict[str, float] | Measurement:
    """node -> write bytes/s for one mount, all nodes writing at once; absent if a node lacks it."""
    # Directories first, on every node, so the writes start together rather than
    # staggered by each node's mktemp round trip.
    with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="fabric-aggregate") as pool:
        futures = [pool.submit(_prepare_collect, n, mount) for n in nodes]
    prepared: list[tuple[list[CommandResult], str | Measurement]] = []
    failure: BaseException | None = None
    for future in futures:
        error = future.exception()
        if error is not None:
            failure = failure or error
            continue
        prepared.append(future.result())
    directories: dict[str, str] = {}
    for node, future in zip(nodes, futures):
        if future.exception() is None and isinstance(future.result()[1], str):
            directories[node.name] = str(future.result()[1])
    for node_evidence, _ in prepared:
        evidence += node_evidence
    try:
        if failure is not None:  # an unreachable node: the aggregate cannot be measured at all
            raise failure
        missing = [d for _, d in prepared if isinstance(d, Measurement)]
        if missing:
            reasons = "; ".join(m.missing or "" for m in missing)
            return Measurement.absent(f"not shared by every node: {reasons}", tuple(evidence))
        timeout = _timeout(settings, writers=len(nodes))
        with ThreadPoolExecutor(max_workers=len(nodes), thread_name_prefix="fabric-aggregate") as pool:
            runs = list(pool.map(lambda n: run_fio(n, directories[n.name], settings, timeout), nodes))
    finally:
        with ThreadPoolExecutor(max_workers=max(len(directories), 1), thread_name_prefix="fabric-aggregate") as pool:
            evidence += pool.map(lambda n: _remove(n, directories[n.name]), [n for n in nodes if n.name in directories])
    out: dict[str, float] = {}
    for node, (parsed, node_runs, _note) in zip(nodes, runs):
        evidence += node_runs
        if parsed.write.bw_bytes_per_s <= 0:
            raise MeasurementError(node.name, "fio reported no write throughput", command=node_runs[-1].command)
        out[node.name] = parsed.write.bw_bytes_per_s
    return out


def _prepare_collect(node: NodeHandle, mount: str) -> tuple[list[CommandResult], str | Measurement]:
    evidence: list[CommandResult] = []
    return evidence, _prepare(node, mount, evidence)
