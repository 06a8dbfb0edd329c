"""Mounts inside simulated nodes: healthy shared and node-local storage, and the faults the storage layer must catch.

Each node runs in its own mount namespace (``unshare --mount --propagation private``), so
a mount made there with ``nsenter`` is seen by that node alone, and never by the host or
the other nodes. The mount points are directories under /var/tmp, which every node and the
host share; on the host they stay plain empty directories, which is itself a fault: a
path the inventory names that nothing is mounted on.

- ``shared(nodes)``: one host directory bound at the same path on every node (ext4 by type,
  one filesystem for all of them, as NFS or Lustre would be).
- ``local(nodes)``: a directory of each node's own bound at the path (a node-local disk).
- ``loop_disks(nodes)``: each node's own ext4 on its own loop device at the path (/dev/loop0 on one
  node, /dev/loop1 on the next: node-local NVMe as findmnt shows it); the devices are detached on close.
- ``tmpfs(nodes)``: tmpfs at the path: files in memory (Linux 6.6+ accepts O_DIRECT there).
- ``ramfs(nodes)``: ramfs at the path: refuses O_DIRECT with EINVAL, as FUSE does.
- ``unmounted()``: just the directory.

Every mount is undone when the ``SimMounts`` closes, however the test ends.
"""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterable
from pathlib import Path

from .cluster import SimCluster, SimClusterError, SimNode

__all__ = ["SimMounts"]

ROOT = Path("/var/tmp")


class SimMounts:
    """Mount points for one test; ``close()`` unmounts everything made and removes the directories."""

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self._mounted: list[tuple[SimNode, str]] = []
        self._dirs: list[Path] = []
        self._loops: list[str] = []  # loop devices attached here, detached on close

    def __enter__(self) -> SimMounts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _nodes(self, nodes: Iterable[SimNode | str] | None) -> list[SimNode]:
        chosen = self.cluster.nodes if nodes is None else nodes
        return [self.cluster.node(n) if isinstance(n, str) else n for n in chosen]

    def _dir(self, what: str) -> Path:
        path = ROOT / f"pytest-fabric-{what}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        self._dirs.append(path)
        return path

    def unmounted(self) -> str:
        """A mount point nothing is mounted on, on any node: a plain directory on the host's disk."""
        return str(self._dir("mnt"))

    def _mount(self, node: SimNode, argv: list[str], target: str) -> None:
        proc = self.cluster.exec(node, argv)
        if proc.returncode != 0:
            raise SimClusterError(f"{node.name}: {' '.join(argv)} failed: {proc.stderr.strip()}")
        self._mounted.append((node, target))

    def shared(self, nodes: Iterable[SimNode | str] | None = None) -> str:
        """One host directory bound at the same path on ``nodes``: every node sees the same files."""
        source, target = self._dir("shared-src"), self.unmounted()
        for node in self._nodes(nodes):
            self._mount(node, ["mount", "--bind", str(source), target], target)
        return target

    def local(self, nodes: Iterable[SimNode | str] | None = None) -> str:
        """Each node's own directory bound at one path: a node-local disk."""
        target = self.unmounted()
        for node in self._nodes(nodes):
            source = self._dir(f"local-{node.name}")
            self._mount(node, ["mount", "--bind", str(source), target], target)
        return target

    def loop_disks(self, nodes: Iterable[SimNode | str] | None = None, size_mib: int = 96) -> str:
        """Each node's own ext4 on a loop device of its own at one path: a node-local disk with its own source."""
        target = self.unmounted()
        images = self._dir("disks")
        for node in self._nodes(nodes):
            image = images / f"{node.name}.img"
            with image.open("wb") as f:
                f.truncate(size_mib * 2**20)
            device = _host(["losetup", "--find", "--show", str(image)]).strip()
            self._loops.append(device)
            _host(["mkfs.ext4", "-q", "-F", device])
            self._mount(node, ["mount", "-t", "ext4", device, target], target)
        return target

    def tmpfs(self, nodes: Iterable[SimNode | str] | None = None, size: str = "256m") -> str:
        """tmpfs at the path on ``nodes``: storage that is memory."""
        target = self.unmounted()
        for node in self._nodes(nodes):
            self._mount(node, ["mount", "-t", "tmpfs", "-o", f"size={size}", "simtmpfs", target], target)
        return target

    def ramfs(self, nodes: Iterable[SimNode | str] | None = None) -> str:
        """ramfs at the path on ``nodes``: a filesystem that refuses O_DIRECT (EINVAL, like FUSE)."""
        target = self.unmounted()
        for node in self._nodes(nodes):
            self._mount(node, ["mount", "-t", "ramfs", "simramfs", target], target)
        return target

    def close(self) -> None:
        for node, target in reversed(self._mounted):
            if node.up:
                self.cluster.exec(node, ["umount", "-l", target])
        self._mounted.clear()
        for device in reversed(self._loops):
            subprocess.run(["losetup", "-d", device], capture_output=True, check=False)
        self._loops.clear()
        for path in reversed(self._dirs):
            shutil.rmtree(path, ignore_errors=True)
        self._dirs.clear()


def _host(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SimClusterError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
    return proc.stdout
