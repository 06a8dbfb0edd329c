"""The storage witness's reading (probes/witness.py storage_bytes) on outputs recorded on this project's machines.

The block-device readings are the probe's command run on an ext4 loop device before and after a
real fio write of 16 MiB (fio 3.33, O_DIRECT) and on the host's /var/tmp (a bind of /dev/vda's ext4);
the NFS reading is constructed in the kernel's mountstats layout (fs/nfs/super.c, ``bytes:``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError
from pytest_fabric.parsers.storage_counters import SECTOR_BYTES, parse

DATA = Path(__file__).resolve().parents[2] / "data" / "storage-counters"


def test_a_loop_devices_sectors_grew_by_at_least_what_fio_wrote() -> None:
    before = parse((DATA / "ext4-loop-before-fio-write-16M.txt").read_text())
    after = parse((DATA / "ext4-loop-after-fio-write-16M.txt").read_text())
    assert (after.major_minor, after.fstype, after.target, after.device) == ("7:0", "ext4", "/var/tmp/h32mnt", "loop0")
    assert after.sectors_written == 1537420 and after.sectors_read == 2072514
    grown = after.bytes_written - before.bytes_written  # type: ignore[operator]
    assert grown == (1537420 - 1499538) * SECTOR_BYTES and 16 * 2**20 <= grown <= 1.2 * 16 * 2**20


def test_a_bind_mount_is_counted_on_the_device_under_it() -> None:
    found = parse((DATA / "ext4-vda-bind-var-tmp.txt").read_text())
    assert (found.major_minor, found.target, found.device) == ("254:0", "/", "vda")
    assert found.nfs_server_written is None


def test_an_nfs_mount_has_its_clients_server_bytes() -> None:
    found = parse((DATA / "nfs4-home-constructed.txt").read_text())
    assert found.device is None and (found.fstype, found.target) == ("nfs4", "/mnt/home")
    assert (found.bytes_read, found.bytes_written) == (1048576, 18874368)  # serverreadbytes, serverwritebytes


def test_tmpfs_has_no_counters() -> None:
    found = parse((DATA / "tmpfs-tmp.txt").read_text())
    assert (found.bytes_read, found.bytes_written, found.fstype) == (None, None, "tmpfs")


@pytest.mark.parametrize("text", ["", "diskstats 7 0 loop0 1 2 3 4 5 6 7\n", "mount 7:0 ext4 /x\ndiskstats 7 0 loop0 1 2\n",
                                  "mount 7:0 ext4 /x\ndiskstats 7 0 loop0 1 2 x 4 5 6 7 8\n", "findmnt: nope\n"])
def test_anything_else_is_a_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)
