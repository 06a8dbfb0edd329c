"""Whether a mount is one filesystem under every node (shared) or each node's own (node-local).

Pure: from what the inventory states (:class:`~pytest_fabric.config.inventory.Mount`) and what findmnt
shows at the path on each node. :mod:`pytest_fabric.probes.mount_sharing` reads findmnt once per run
and keeps the answer; :mod:`pytest_fabric.run.sharing` turns it into who takes turns.

What findmnt tells (:func:`from_findmnt`):

- a network, parallel or cluster filesystem (:data:`~pytest_fabric.config.inventory.SHARED_FSTYPES`:
  lustre, gpfs, nfs, beegfs, ceph, wekafs, ...) on any node: **shared**;
- a local block-device filesystem (:data:`LOCAL_FSTYPES`: ext4, xfs, btrfs, ...) from a different
  source on each node: **node-local**. These filesystems cannot be mounted read-write by two
  machines at once, and a different device on each node is each node's own disk;
- memory (tmpfs, ramfs): **node-local**, each node's own RAM;
- anything else findmnt cannot decide: a local type under one source on every node is one
  filesystem where the nodes share a kernel (containers, the simulated cluster's bind mounts) and a
  different disk under one device name on each machine (``/dev/md0`` on every DGX); 9p and
  virtiofs pass a VM's host directory through, node-local or shared as the host's is; other FUSE
  types may be either.

:func:`decide`: ``shared:`` in the inventory wins, and where findmnt shows the other a contradiction
is said; else what findmnt tells; else, where it cannot tell, the inventory's rule as before: a mount
of no stated type counts as shared (taking turns on a node-local disk is slower, never wrong), one
of a stated local type as node-local.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_fabric.config.inventory import SHARED_FSTYPES, Mount
from pytest_fabric.parsers.findmnt import FindmntFilesystem

__all__ = ["LOCAL_FSTYPES", "MEMORY_FSTYPES", "Found", "MountSharing", "decide", "from_findmnt"]

#: filesystems on a block device that one machine at a time mounts read-write: each node's own
LOCAL_FSTYPES = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "f2fs", "jfs", "reiserfs", "bcachefs", "zfs",
                           "vfat", "exfat", "ntfs3"})

#: filesystems whose files are the node's own memory
MEMORY_FSTYPES = frozenset({"tmpfs", "ramfs"})

_SHOWN = 3  # nodes a message names before "..."


@dataclass(frozen=True)
class Found:
    """What findmnt alone says: ``shared`` True, False (node-local) or None (it cannot tell), and why."""

    shared: bool | None
    why: str


@dataclass(frozen=True)
class MountSharing:
    """The run's answer for one mount: shared or node-local, what decided it, and any contradiction."""

    path: str
    shared: bool
    why: str
    found: Found
    #: the inventory's ``shared:`` against what findmnt shows (empty when they agree or findmnt cannot tell)
    contradiction: str = ""

    def to_json(self) -> dict[str, object]:
        """As the record keeps it beside a measurement (``extra["measured"]["sharing"]``)."""
        out: dict[str, object] = {"shared": self.shared, "why": self.why}
        if self.contradiction:
            out["contradiction"] = self.contradiction
        return out


def _listed(pairs: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{what} on {node}" for node, what in pairs[:_SHOWN])
    return shown + (", ..." if len(pairs) > _SHOWN else "")


def from_findmnt(seen: Mapping[str, FindmntFilesystem | None]) -> Found:
    """What findmnt's mount at the path on each node (None: not mounted there, or not read) says."""
    mounted = {node: fs for node, fs in seen.items() if fs is not None}
    if not mounted:
        return Found(None, "findmnt shows nothing mounted there on any node it read")
    network = [(node, fs) for node, fs in mounted.items() if fs.fstype in SHARED_FSTYPES]
    if network:
        node, fs = network[0]
        return Found(True, f"findmnt shows {fs.fstype} from {fs.source} on {node}, a network or parallel filesystem")
    types = sorted({fs.fstype for fs in mounted.values()})
    if all(t in MEMORY_FSTYPES for t in types):
        return Found(False, f"findmnt shows {'/'.join(types)}, each node's own memory")
    sources = [(node, fs.source) for node, fs in mounted.items()]
    if not all(t in LOCAL_FSTYPES for t in types):
        other = next(t for t in types if t not in LOCAL_FSTYPES)
        return Found(None, f"findmnt shows {other}, a type that may be shared or node-local ({_listed(sources)})")
    kind = "/".join(types)
    if len(mounted) < 2:
        return Found(None, f"findmnt shows {kind} ({_listed(sources)}) on one node only")
    if len({source for _, source in sources}) == len(sources):
        return Found(False, f"findmnt shows {kind} from a different source on each node ({_listed(sources)})")
    alike = len({source for _, source in sources}) == 1
    return Found(None, (
        f"findmnt shows {kind} from the same source {sources[0][1]} on every node" if alike else
        f"findmnt shows {kind}, some nodes from the same source ({_listed(sources)})"
    ) + ": one filesystem where the nodes share a kernel, a different disk under one name on each machine "
        "(write shared: false for that)")


def decide(spec: Mount, seen: Mapping[str, FindmntFilesystem | None]) -> MountSharing:
    """Whether ``spec``'s mount is shared: its ``shared:``, else what findmnt shows (``seen``, by node),
    else the stated type (none stated: shared). A ``shared:`` findmnt contradicts is said."""
    found = from_findmnt(seen)
    if spec.shared is not None:
        written = "true" if spec.shared else "false"
        contradiction = ""
        if found.shared is not None and found.shared != spec.shared:
            contradiction = (
                f"storage mount {spec.path}: the inventory says shared: {written}, but {found.why}: measured as "
                f"{'shared (one node at a time unless the check says together)' if spec.shared else 'node-local (every node at once)'}"
                ", as the inventory says"
            )
        return MountSharing(spec.path, spec.shared, f"shared: {written} in the inventory", found, contradiction)
    if found.shared is not None:
        return MountSharing(spec.path, found.shared, found.why, found)
    if spec.fstype is None:
        return MountSharing(spec.path, True, f"{found.why}; no type or shared: in the inventory, so shared", found)
    shared = spec.is_shared()
    return MountSharing(spec.path, shared, f"{found.why}; the inventory's type {spec.fstype} is "
                        f"{'shared' if shared else 'node-local'}", found)
