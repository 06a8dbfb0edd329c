"""findmnt -J on captures from the development machine (tests/data/findmnt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers import get_parser
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.findmnt import FindmntFilesystem, parse_findmnt

DATA = Path(__file__).resolve().parents[2] / "data" / "findmnt"


def test_mountpoint_lists_stacked_mounts_oldest_first() -> None:
    stacked = parse_findmnt((DATA / "mountpoint-stacked-tmpfs.json").read_text())
    assert [m.target for m in stacked] == ["/dev/shm", "/dev/shm"]
    top = stacked[-1]
    assert (top.fstype, top.source) == ("tmpfs", "tmpfs")
    assert top.options[:2] == ("rw", "relatime") and top.option("size") == "size=24684084k"


def test_target_names_the_filesystem_a_path_lives_on() -> None:
    (root,) = parse_findmnt((DATA / "target-ext4-root.json").read_text())
    assert (root.target, root.source, root.fstype) == ("/", "/dev/vda", "ext4")
    assert root.option("rw") == "rw" and root.option("ro") is None
    assert root.describe().startswith("ext4 from /dev/vda (rw,relatime,")


def test_a_tree_is_flattened_depth_first() -> None:
    mounts = parse_findmnt((DATA / "tree.json").read_text())
    targets = [m.target for m in mounts]
    assert targets[0] == "/" and targets[1] == "/proc"
    assert targets.index("/sys") < targets.index("/sys/fs/cgroup") < targets.index("/sys/fs/cgroup/cpu")
    assert len(targets) > 10


def test_an_option_is_matched_by_name_not_by_substring() -> None:
    nfs = FindmntFilesystem("/data", "srv:/export", "nfs4", ("rw", "vers=4.2", "proto=tcp"))
    assert nfs.option("proto") == "proto=tcp" and nfs.option("ro") is None and nfs.option("pro") is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", UnrecognizedOutput),
        ('{"filesystems": []}', UnrecognizedOutput),
        ('{"mounts": []}', UnrecognizedOutput),
        ('{"filesystems": [{"target": "/x"}]}', ParseError),
        ('{"filesystems": [{"target": "/x", "fstype": 3}]}', ParseError),
        ('{"filesystems": {"target": "/x"}}', ParseError),
    ],
)
def test_what_is_not_findmnt_output_says_so(text: str, error: type[ParseError]) -> None:
    with pytest.raises(error, match="findmnt"):
        parse_findmnt(text)


def test_registered_for_the_command_line() -> None:
    assert get_parser("findmnt").function is parse_findmnt
