"""What storage and egress wave members share: the rules the fixtures and the plan both read."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.inventory import Inventory, load_inventory
from pytest_fabric.config.profile import Profile
from pytest_fabric.run import sharing
from pytest_fabric.run.batches import Share

MOUNTS = """
nodes: [{name: "n[1-6]", host: "10.0.0.[1-6]"}]
storage:
  mounts:
    - {path: /lustre, fstype: lustre}
    - {path: /scratch, fstype: xfs}
    - /unstated
egress:
  targets: [https://mirror.example.com/a.bin, "https://mirror.example.com:443/b.bin", "http://[fd00::1]:8080/c"]
"""


def _inventory(tmp_path: Path, extra: str = "") -> Inventory:
    path = tmp_path / "inv.yaml"
    path.write_text(textwrap.dedent(MOUNTS).lstrip() + extra, encoding="utf-8")
    return load_inventory(path)


def _profile(tmp_path: Path, body: str) -> Profile:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + textwrap.dedent(body).lstrip(), encoding="utf-8")
    return load_profile(str(path))


def test_a_shared_mount_is_taken_in_turns_alone_and_shared_by_nobody_together(
    tmp_path: Path,
) -> None:
    inventory = _inventory(tmp_path)
    profile = _profile(
        tmp_path,
        """
        storage:
          sequential_write: {min: 1 GB/s}
          sequential_read: {min: 1 GB/s, measured: together}
          random_read_iops: {min: 10, concurrency: 3}
        """,
    )
    assert sharing.share_for(
        inventory, profile, "sequential_write", "mount", ("n1", "/lustre")
    ) == Share("shared mount /lustre", 1)
    # A mount of no stated type may be shared: taking turns is slower, never wrong.
    assert (
        sharing.share_for(inventory, profile, "sequential_write", "mount", ("n1", "/unstated"))
        is not None
    )
    assert sharing.share_for(
        inventory, profile, "random_read_iops", "mount", ("n1", "/lustre")
    ) == Share("shared mount /lustre", 3)
    # Together: one wave under --fabric-fanout, nothing taken in turns.
    assert (
        sharing.share_for(inventory, profile, "sequential_read", "mount", ("n1", "/lustre")) is None
    )
    # Node-local disks and the temp dir run on every node at once, whatever the check says.
    for check in ("sequential_write", "sequential_read"):
        assert sharing.share_for(inventory, profile, check, "mount", ("n1", "/scratch")) is None
        assert sharing.share_for(inventory, profile, check, "mount", ("n1", None)) is None
    assert sharing.measured_mode(profile, "sequential_read") == "together"
    assert sharing.measured_mode(profile, "sequential_write") == "alone"


def test_transfers_to_one_server_are_capped_by_egress_concurrency_and_lookups_are_not(
    tmp_path: Path,
) -> None:
    profile = _profile(
        tmp_path,
        """
        egress:
          dns_resolve: {max: 1 s}
          download: {min: 1 Gb/s}
          upload: {min: 1 Gb/s, concurrency: 2}
        """,
    )
    default = _inventory(tmp_path)
    a, b = default.egress_targets[:2]
    # Two URLs on one mirror are one server, and share its cap.
    assert sharing.egress_share(default, profile, "download", a) == Share(
        "egress target mirror.example.com:443", 8
    )
    assert sharing.egress_share(default, profile, "download", b) == sharing.egress_share(
        default, profile, "download", a
    )
    assert sharing.egress_server(default.egress_targets[2]) == "[fd00::1]:8080"
    assert sharing.egress_share(default, profile, "upload", a) == Share(
        "egress target mirror.example.com:443", 2
    )
    assert sharing.egress_share(default, profile, "dns_resolve", a) is None
    assert (
        sharing.share_for(default, profile, "connect_latency", "egress_target", ("n1", a)) is None
    )
    # The inventory's cap is the server's: the profile may lower it, never raise it.
    tight = _inventory(tmp_path, "  concurrency: 1\n")
    assert tight.egress_concurrency == 1
    assert sharing.egress_share(tight, profile, "upload", a) == Share(
        "egress target mirror.example.com:443", 1
    )


@pytest.mark.parametrize(
    ("share", "holders", "fanout", "expected"),
    [
        (None, 512, 64, 64),
        (None, 4, 64, 4),
        (Share("x", 8), 512, 512, 8),
        (Share("x", 8), 512, 4, 4),
        (Share("x", 8), 3, 64, 3),
    ],
)
def test_at_once_is_the_cap_the_fanout_or_the_holders(
    share: Share | None, holders: int, fanout: int, expected: int
) -> None:
    assert sharing.at_once(share, holders, fanout) == expected


def test_the_runs_decision_from_findmnt_outweighs_the_inventory_alone(tmp_path: Path) -> None:
    """An unstated mount counts as shared until findmnt shows a different ext4 device on each node."""
    from pytest_fabric.parsers.findmnt import FindmntFilesystem
    from pytest_fabric.run.locality import decide

    inventory = _inventory(tmp_path)
    profile = _profile(tmp_path, "storage:\n  sequential_write: {min: 1 GB/s}\n")
    seen = {f"n{i}": FindmntFilesystem("/unstated", f"/dev/loop{i}", "ext4", ("rw",)) for i in range(1, 4)}
    local = decide(inventory.mount("/unstated"), seen)
    assert sharing.share_for(inventory, profile, "sequential_write", "mount", ("n1", "/unstated")) is not None
    assert sharing.share_for(inventory, profile, "sequential_write", "mount", ("n1", "/unstated"),
                             lambda path: local if path == "/unstated" else None) is None
    assert sharing.mount_is_shared(inventory, "/unstated", local) is False
