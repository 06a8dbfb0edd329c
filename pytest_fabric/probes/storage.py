"""Storage throughput on a node's mount with fio (JSON output).

Each run works in a fresh directory under the mount (``mktemp -d``) and removes
it afterwards, so a failed or interrupted check leaves no multi-GiB files on a
shared filesystem.  With ``direct`` (the default) fio uses O_DIRECT so the page
cache does not flatter the result; a filesystem that refuses O_DIRECT (tmpfs)
is measured buffered and the detail says so.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..cluster import NodeHandle
from ..parsers import fio
from ..transport.base import CommandFailed, CommandResult
from ..units import bandwidth, parse_quantity
from ..verdict import Measurement
from .base import MeasurementError, parse_or_raise

__all__ = ["FioSettings", "MountInfo", "find_mount", "sequential", "workdir_for"]


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


def sequential(node: NodeHandle, mount: str | None, settings: FioSettings) -> Measurement:
    """Sequential read or write bandwidth in a fresh directory under ``mount``."""
    evidence: list[CommandResult] = []
    label = mount or "/tmp (no mounts in the inventory)"
    if mount is not None:
        info = find_mount(node, mount)
        evidence.append(info.evidence)
        if not info.exists:
            return Measurement.absent(f"{mount} does not exist on {node.name}", tuple(evidence))
    directory, made = workdir_for(node, mount)
    evidence.append(made)
    # Generous: laying out the files plus the run itself at a pessimistic 50 MB/s.
    timeout = 60 + 2 * settings.size_bytes * settings.jobs / 50e6
    try:
        parsed, runs, note = run_fio(node, directory, settings, timeout)
        evidence += runs
    finally:
        evidence.append(node.run(f"rm -rf -- {shlex.quote(directory)}", timeout=120, check=False))
    io = parsed.write if settings.rw in ("write", "randwrite") else parsed.read
    if io.bw_bytes_per_s <= 0:
        raise MeasurementError(node.name, f"fio reported no {settings.rw} throughput", command=evidence[-2].command)
    detail = (
        f"fio {settings.rw} on {label}, {settings.jobs} job(s) x {parse_quantity(settings.size_bytes).value / 2**20:.0f} MiB, "
        f"bs {settings.block_size_bytes // 1024} KiB, direct={'yes' if settings.direct and not note else 'no'}"
    )
    if note:
        detail += f"; {note}"
    return Measurement(
        value=bandwidth(io.bw_bytes_per_s, "B/s"),
        detail=detail,
        evidence=tuple(evidence),
        extra={"tool_versions": {"fio": parsed.version} if parsed.version else {}, "iops": io.iops},
    )
