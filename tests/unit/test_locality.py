"""Whether a mount is one filesystem under every node or each node's own: the pure decision (locality.py)."""

from __future__ import annotations

from pytest_fabric.config.inventory import Mount
from pytest_fabric.parsers.findmnt import FindmntFilesystem
from pytest_fabric.run.locality import decide, from_findmnt


def _fs(fstype: str, source: str, target: str = "/scratch") -> FindmntFilesystem:
    return FindmntFilesystem(target=target, source=source, fstype=fstype, options=("rw",))


def _each(fstype: str, sources: list[str]) -> dict[str, FindmntFilesystem | None]:
    return {f"n{i}": _fs(fstype, source) for i, source in enumerate(sources, 1)}


def test_a_local_type_from_a_different_device_on_each_node_is_node_local() -> None:
    found = from_findmnt(_each("ext4", ["/dev/loop0", "/dev/loop1", "/dev/loop2"]))
    assert found.shared is False
    assert "ext4" in found.why and "different" in found.why and "/dev/loop0 on n1" in found.why
    for fstype in ("xfs", "btrfs"):
        assert from_findmnt(_each(fstype, ["/dev/nvme0n1", "/dev/nvme1n1"])).shared is False


def test_a_network_or_parallel_type_on_any_node_is_shared() -> None:
    for fstype in ("lustre", "gpfs", "nfs", "nfs4", "beegfs", "ceph", "cephfs", "wekafs", "glusterfs",
                   "fuse.glusterfs", "cifs", "smb3", "gfs2", "ocfs2"):
        found = from_findmnt(_each(fstype, ["10.0.0.1@o2ib:/fs", "10.0.0.1@o2ib:/fs"]))
        assert found.shared is True, fstype
        assert fstype in found.why
    # one node's nfs makes the mount shared whatever the others show
    seen = {**_each("ext4", ["/dev/sda1", "/dev/sdb1"]), "n3": _fs("nfs4", "srv:/export")}
    assert from_findmnt(seen).shared is True


def test_the_same_source_on_every_node_is_not_told_apart_by_findmnt() -> None:
    """One name on every node: one filesystem where the nodes share a kernel, or a different disk under
    one device name on each machine (/dev/md0 on every DGX): findmnt cannot tell, the inventory decides."""
    found = from_findmnt(_each("ext4", ["/dev/md0", "/dev/md0", "/dev/md0"]))
    assert found.shared is None and "/dev/md0" in found.why and "shared: false" in found.why
    # a bind of one directory on every node, as the simulated cluster's shared mount is
    assert from_findmnt(_each("ext4", ["/dev/sda1[/var/tmp/src]"] * 2)).shared is None
    # some alike, some different: no different source on each node
    assert from_findmnt(_each("ext4", ["/dev/sda1", "/dev/sda1", "/dev/sdb1"])).shared is None


def test_memory_is_each_nodes_own_and_unknown_types_or_nothing_mounted_cannot_be_told() -> None:
    assert from_findmnt(_each("tmpfs", ["tmpfs", "tmpfs"])).shared is False
    for fstype in ("fuse.sshfs", "9p", "virtiofs", "overlay"):
        found = from_findmnt(_each(fstype, ["a", "b"]))
        assert found.shared is None and fstype in found.why
    assert from_findmnt({"n1": None, "n2": None}).shared is None
    assert from_findmnt({}).shared is None
    # one node is no evidence of a different device on each
    assert from_findmnt(_each("ext4", ["/dev/loop0"])).shared is None
    # a node without the mount does not count: the others still tell
    assert from_findmnt({**_each("ext4", ["/dev/loop0", "/dev/loop1"]), "n3": None}).shared is False


def test_findmnt_decides_where_the_inventory_does_not_say() -> None:
    local = _each("ext4", ["/dev/loop0", "/dev/loop1"])
    decided = decide(Mount("/scratch"), local)
    assert decided.shared is False and decided.contradiction == "" and "different" in decided.why
    assert decide(Mount("/scratch"), _each("lustre", ["mgs@o2ib:/fs"] * 2)).shared is True


def test_where_findmnt_cannot_tell_the_inventory_type_decides_as_before() -> None:
    same = _each("ext4", ["/dev/md0", "/dev/md0"])
    # no type stated: shared (taking turns on a node-local disk is slower, never wrong)
    assert decide(Mount("/raid"), same).shared is True
    # a node-local type stated: node-local, as it was
    assert decide(Mount("/raid", fstype="ext4"), same).shared is False
    assert decide(Mount("/lustre", fstype="lustre"), {}).shared is True
    assert decide(Mount("/raid"), {}).shared is True


def test_shared_in_the_inventory_overrides_and_a_contradiction_is_said() -> None:
    local = _each("ext4", ["/dev/loop0", "/dev/loop1"])
    decided = decide(Mount("/scratch", shared=True), local)
    assert decided.shared is True
    assert "shared: true" in decided.contradiction and "/dev/loop0 on n1" in decided.contradiction
    assert "/scratch" in decided.contradiction
    decided = decide(Mount("/lustre", shared=False), _each("lustre", ["mgs@o2ib:/fs"] * 2))
    assert decided.shared is False and "shared: false" in decided.contradiction and "lustre" in decided.contradiction
    # no contradiction where findmnt agrees or cannot tell
    assert decide(Mount("/scratch", shared=False), local).contradiction == ""
    assert decide(Mount("/raid", shared=False), _each("ext4", ["/dev/md0"] * 2)).contradiction == ""
