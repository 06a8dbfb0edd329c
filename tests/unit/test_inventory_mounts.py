"""Inventory storage.mounts: a path, or what is mounted there (type, options, shared); errors name file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Inventory, Mount, load_inventory
from pytest_fabric.config.yamlsource import SourceError

MOUNTS = """\
nodes:
  - name: gpu01
storage:
  mounts:
    - /scratch
    - {path: /mnt/lustre, fstype: lustre}
    - {path: /data, fstype: nfs4, options: [proto=rdma]}
    - {path: /nvme, fstype: xfs, shared: false}
    - {path: /shared, shared: true}
"""


def _load(tmp_path: Path, text: str) -> Inventory:
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    return load_inventory(path)


def test_each_form_of_a_mount(tmp_path: Path) -> None:
    inventory = _load(tmp_path, MOUNTS)
    assert inventory.mounts == ("/scratch", "/mnt/lustre", "/data", "/nvme", "/shared")
    assert inventory.mount("/scratch") == Mount("/scratch")
    assert inventory.mount("/data") == Mount("/data", "nfs4", ("proto=rdma",))
    assert [inventory.mount(p).is_shared() for p in inventory.mounts] == [False, True, True, False, True]
    # a path with no type written is shared when what is mounted there is a shared type
    assert inventory.mount("/scratch").is_shared("beegfs") and not inventory.mount("/scratch").is_shared("xfs")
    assert inventory.mount("/elsewhere") == Mount("/elsewhere")


@pytest.mark.parametrize(
    ("entry", "says", "line"),
    [
        ("{path: /mnt/lustre, fstyp: lustre}", "storage.mounts[1].fstyp: unknown key (did you mean 'fstype'?)", 6),
        ('{path: /data, fstype: "nfs 4"}', "storage.mounts[1].fstype: 'nfs 4' is not a filesystem type", 6),
        ('{path: /data, options: ["proto=rdma;reboot"]}', "storage.mounts[1].options: 'proto=rdma;reboot' is not a mount option", 6),
        ("{path: /data, shared: maybe}", "storage.mounts[1].shared: Input should be a valid boolean", 6),
        ("relative/dir", "storage.mounts[1]: 'relative/dir': a mount must be an absolute path", 6),
        ("{fstype: xfs}", "storage.mounts[1].path: required but missing", 6),
        ("/scratch", "storage.mounts: a mount is listed twice", 4),
    ],
)
def test_a_bad_mount_names_file_line_and_field(tmp_path: Path, entry: str, says: str, line: int) -> None:
    text = f"nodes:\n  - name: gpu01\nstorage:\n  mounts:\n    - /scratch\n    - {entry}\n"
    with pytest.raises(SourceError) as raised:
        _load(tmp_path, text)
    assert f"inv.yaml:{line}: {says}" in str(raised.value)
