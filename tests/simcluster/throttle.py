"""Nodes that write at unequal speeds: a block-I/O cgroup per node, with a write limit on the disk.

A shared mount on the simulated cluster is one host directory bound into every node
(mounts.py), so every node's writes reach the same block device. Throttling what one node's
processes may write to that device per second makes it a slower client of the same
filesystem, as a node with a weaker link to a parallel filesystem is.

``WriteThrottle(cluster).limit(node, bytes_per_s, path)`` makes a cgroup of the node's own
(cgroup v1 ``blkio``: ``blkio.throttle.write_bps_device``; cgroup v2: ``io.max wbps=``, where
the ``io`` controller is already enabled at the root), moves every process of the node's PID
namespace into it (its sshd and any session it holds open, so whatever the node runs from
then on is throttled), and limits writes to the device under ``path``. The limit counts
O_DIRECT writes as they are issued; buffered writes are counted only as written back (and in
v1 not per cgroup at all), so measure with direct I/O. ``written()`` is the kernel's count of
bytes the node wrote to that device since the limit was set: evidence independent of what fio
reports.

``close()`` moves the processes back and removes the cgroups, however the test ends.
``missing_throttle()`` says why this machine cannot do it (empty when it can).
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from .cluster import SimCluster, SimClusterError, SimNode

__all__ = ["NodeThrottle", "WriteThrottle", "block_device", "missing_throttle"]

V1 = Path("/sys/fs/cgroup/blkio")
V2 = Path("/sys/fs/cgroup")


def _v2_io() -> bool:
    controllers = V2 / "cgroup.subtree_control"
    return (V2 / "cgroup.controllers").is_file() and controllers.is_file() and "io" in controllers.read_text().split()


def block_device(path: str | os.PathLike[str]) -> str:
    """``MAJ:MIN`` of the whole disk the filesystem under ``path`` is on (throttles take disks, not partitions)."""
    dev = os.stat(path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    sysfs = Path(f"/sys/dev/block/{major}:{minor}")
    if major == 0 or not sysfs.exists():
        raise SimClusterError(f"{path} is on no block device (device {major}:{minor}): its writes cannot be throttled")
    if (sysfs / "partition").exists():
        return (sysfs.resolve().parent / "dev").read_text().strip()
    return f"{major}:{minor}"


def missing_throttle(path: str | os.PathLike[str] = "/var/tmp") -> list[str]:
    """Why node writes under ``path`` cannot be throttled here (empty when they can)."""
    reasons = []
    if os.geteuid() != 0:
        reasons.append("not root (cgroups need root)")
    if not (V1 / "blkio.throttle.write_bps_device").exists() and not _v2_io():
        reasons.append("no cgroup v1 blkio hierarchy at /sys/fs/cgroup/blkio and no cgroup v2 io controller enabled at the root")
    try:
        block_device(path)
    except (SimClusterError, OSError) as exc:
        reasons.append(str(exc))
    return reasons


@dataclass
class NodeThrottle:
    """One node's cgroup: its write limit on one device, and what it has written there since."""

    node: SimNode
    cgroup: Path
    device: str
    v1: bool
    home: Path  # the cgroup the node's processes were in, where close() puts them back
    _start: int = 0

    def _written_total(self) -> int:
        if self.v1:
            for line in (self.cgroup / "blkio.throttle.io_service_bytes").read_text().splitlines():
                fields = line.split()
                if len(fields) == 3 and fields[0] == self.device and fields[1] == "Write":
                    return int(fields[2])
            return 0
        for line in (self.cgroup / "io.stat").read_text().splitlines():
            fields = line.split()
            if fields and fields[0] == self.device:
                stats = dict(f.split("=", 1) for f in fields[1:])
                return int(stats.get("wbytes", 0))
        return 0

    def written(self) -> int:
        """Bytes the node's processes wrote to the device since the limit was set (the kernel's count)."""
        return self._written_total() - self._start


class WriteThrottle:
    """Per-node write limits for one test; ``close()`` undoes every one."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.v1 = (V1 / "blkio.throttle.write_bps_device").exists()
        self.root = V1 if self.v1 else V2
        self._made: list[NodeThrottle] = []

    def __enter__(self) -> WriteThrottle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pids(self, node: SimNode) -> list[int]:
        """Every process of the node's PID namespace, its sshd included."""
        if node.sshd_pid is None:
            raise SimClusterError(f"{node.name}: sshd is stopped; nothing to throttle")
        ns = os.readlink(f"/proc/{node.sshd_pid}/ns/pid")
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    if os.readlink(f"/proc/{entry}/ns/pid") == ns:
                        pids.append(int(entry))
                except OSError:
                    continue  # exited while we looked
        return pids

    def _home(self, pid: int) -> Path:
        """The cgroup (of this hierarchy) ``pid`` is in."""
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, controllers, where = line.split(":", 2)
            if (self.v1 and "blkio" in controllers.split(",")) or (not self.v1 and controllers == ""):
                return self.root / where.lstrip("/")
        return self.root

    def _move(self, pids: list[int], cgroup: Path) -> None:
        for pid in pids:
            try:
                (cgroup / "cgroup.procs").write_text(f"{pid}\n")
            except ProcessLookupError:
                continue  # exited since

    def limit(self, node: SimNode | str, bytes_per_s: int, path: str | os.PathLike[str]) -> NodeThrottle:
        """Let ``node`` write at most ``bytes_per_s`` to the disk under ``path``, from now on."""
        node = self.cluster.node(node) if isinstance(node, str) else node
        device = block_device(path)
        cgroup = self.root / f"pytest-fabric-{self.cluster.prefix}-{node.name}-{uuid.uuid4().hex[:6]}"
        pids = self._pids(node)
        home = self._home(node.sshd_pid or pids[0])
        cgroup.mkdir()
        made = NodeThrottle(node, cgroup, device, self.v1, home)
        self._made.append(made)
        if self.v1:
            (cgroup / "blkio.throttle.write_bps_device").write_text(f"{device} {int(bytes_per_s)}\n")
        else:
            (cgroup / "io.max").write_text(f"{device} wbps={int(bytes_per_s)}\n")
        self._move(pids, cgroup)
        made._start = made._written_total()
        return made

    def close(self) -> None:
        for made in reversed(self._made):
            if made.cgroup.exists():
                home = made.home if made.home.is_dir() else self.root
                for _ in range(3):  # a process forked as they moved is moved on the next pass
                    self._move([int(p) for p in (made.cgroup / "cgroup.procs").read_text().split()], home)
                    try:
                        made.cgroup.rmdir()
                        break
                    except OSError:
                        continue
        self._made.clear()
