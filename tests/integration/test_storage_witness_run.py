"""fio held to the block device it wrote to: a wrapper that inflates fio's JSON consistently is caught.

Two simulated nodes, each with its own ext4 on its own loop device (tests/simcluster/mounts.py
``loop_disks``: a real /proc/diskstats line per node) and its own tmpfs /tmp. node02 runs a
provider's wrapper in front of the real fio: every byte count, rate and IOPS of its JSON times
four (bytes over runtime still give the rate). On the loop disk the sectors the kernel counted
are a quarter of what the wrapper claims: node02's sequential_write fails as uncorroborated on
node02, node01's passes with the block device witness noted. On tmpfs no device counts anything:
both say "no witness on this filesystem" (not run, never agrees), and node02's inflated figure
stands on fio's word, as docs/report.md says. One run of the real command line, ~15 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.mounts import SimMounts

CHEAT = "node02"
PROFILE = """name: sim-storage-witness
storage:
  sequential_write: {min: 1 MB/s, size: 16 MiB, direct: false}
"""
# The real fio, every io_bytes/io_kbytes/bw/bw_bytes/iops/total_ios of its JSON times four.
FIO_WRAPPER = r"""#!/bin/sh
case " $* " in *" --output-format=json "*) ;; *) exec /usr/bin/fio "$@" ;; esac
/usr/bin/fio "$@" | python3 -S -c '
import json, sys
KEYS = ("io_bytes", "io_kbytes", "bw", "bw_bytes", "iops", "total_ios")
def scale(x):
    if isinstance(x, dict):
        return {k: v * 4 if k in KEYS and isinstance(v, (int, float)) else scale(v) for k, v in x.items()}
    return [scale(v) for v in x] if isinstance(x, list) else x
json.dump(scale(json.load(sys.stdin)), sys.stdout, indent=1)
'
"""


@pytest.fixture
def record(pytester: pytest.Pytester, simcluster: SimCluster) -> Iterator[dict[str, Any]]:
    nodes = [n.name for n in simcluster.nodes[:2]]
    profile = pytester.path / "profile.yaml"
    profile.write_text(PROFILE)
    with SimMounts(simcluster) as mounts:
        disk = mounts.loop_disks(nodes)
        inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes,
                                               extra={"storage": {"mounts": [disk, "/tmp"]}})
        simcluster.install_tool(CHEAT, "fio", FIO_WRAPPER)
        try:
            _, found = run_with_record(pytester, inventory, profile, "-k", "sequential_write")
        finally:
            (simcluster.node(CHEAT).bindir / "fio").unlink(missing_ok=True)
        found["_disk"] = disk
        yield found


def test_the_inflating_node_is_uncorroborated_on_its_block_device_the_honest_one_agrees(
        record: dict[str, Any]) -> None:
    disk = record["_disk"]
    writes = {c["subject"]: c for c in record["checks"] if c["check"] == "sequential_write"}
    assert set(writes) == {f"node01:{disk}", f"node02:{disk}", "node01:/tmp", "node02:/tmp"}, writes
    for node in ("node01", CHEAT):
        check = writes[f"{node}:{disk}"]
        (block,) = [c for c in check["extra"]["corroborations"] if c["witness"] == "block device counters"]
        assert block["node"] == node and "sectors written x 512" in block["detail"]
        assert {c["status"] for c in check["extra"]["corroborations"] if c["witness"] == "internal"} == {"agrees"}
        if node == CHEAT:
            assert check["outcome"] == "failed" and f"{node}:{disk}: uncorroborated on {CHEAT}: " in check["message"]
            assert block["status"] == "uncorroborated" and block["claimed"] == 4 * 16 * 2**20
            assert block["witnessed"] < 2 * 16 * 2**20  # what reached the disk: 16 MiB and its metadata
        else:
            assert check["outcome"] == "passed", check["message"]
            assert block["status"] == "agrees" and block["witnessed"] >= 16 * 2**20
    for node in ("node01", CHEAT):
        check = writes[f"{node}:/tmp"]
        assert check["outcome"] == "passed", check["message"]
        (none,) = [c for c in check["extra"]["corroborations"] if c["witness"] == "storage counters"]
        assert none["status"] == "not run" and "no witness on this filesystem (tmpfs on /tmp" in none["detail"]
