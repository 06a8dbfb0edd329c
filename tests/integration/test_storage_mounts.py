"""The storage layer measures the storage the inventory names, end to end, on the simulated cluster.

Mounts are made inside the nodes' own mount namespaces (tests/simcluster/mounts.py): a host
directory bound on several nodes stands in for a shared filesystem, a directory of each node's
own for a node-local disk, tmpfs for storage that is memory, ramfs for a filesystem that refuses
O_DIRECT (as FUSE does). A path with nothing mounted is a plain directory on the host's disk:
the unmounted /mnt/lustre case.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import run_with_record
from simcluster.mounts import SimMounts

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-mounts.yaml"


@pytest.fixture
def mounts(simcluster: SimCluster) -> Iterator[SimMounts]:
    with SimMounts(simcluster) as made:
        yield made


def run_fabric(pytester: pytest.Pytester, inventory: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_with_record(pytester, inventory, PROFILE, *args)


def checks(record: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [c for c in record["checks"] if c["check"] == check]


def inventory_for(simcluster: SimCluster, pytester: pytest.Pytester, nodes: list[str], mount: Any) -> Path:
    return simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes, extra={"storage": {"mounts": [mount]}})


def test_an_unmounted_mount_fails_mount_and_no_storage_check_passes_on_it(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    # Nothing mounted at the path: fio would write to the host's own disk there and pass "as the mount".
    path = mounts.unmounted()
    nodes = [n.name for n in simcluster.nodes[:3]]
    result, record = run_fabric(pytester, inventory_for(simcluster, pytester, nodes, path), "-m", "storage")
    # per node: mount fails; sequential_read/_write, random_read_iops and checkpoint_write error, as does
    # aggregate_write (the bind-less path is ext4: node-local, so it skips instead)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0, result.stdout.str()
    assert outcomes.get("failed") == 3 and outcomes.get("errors") == 4 * 3
    for node in nodes:
        result.stdout.fnmatch_lines([f"*{node}:{path}: {path} is not a mount point on {node}: it is a directory on / (ext4 *"])
    errored = [c for c in record["checks"] if c["outcome"] == "error"]
    assert errored and all(f"{path} is not a mount point on" in c["message"] for c in errored)
    assert all("nothing was measured there" in c["message"] for c in errored)
    assert {c["outcome"] for c in checks(record, "aggregate_write")} == {"skipped"}


def test_a_mount_of_another_type_or_missing_on_one_node_fails_mount_naming_what_is_there(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:3]]
    path = mounts.shared(nodes[:2])  # ext4 (a bind of the host's disk) on two nodes, nothing on the third
    inventory = inventory_for(simcluster, pytester, nodes, {"path": path, "fstype": "nfs4", "options": ["proto=rdma"]})
    result, record = run_fabric(pytester, inventory, "-k", "mount or sequential_write or aggregate_write")
    result.assert_outcomes(failed=3, errors=3 + 1)
    for node in nodes[:2]:
        result.stdout.fnmatch_lines([
            f"*{node}:{path}: fstype measured ext4, does not meet == nfs4; findmnt --mountpoint {path}: ext4 from *",
            f"*{node}:{path}: options measured no proto, does not meet == proto=rdma*",
        ])
    result.stdout.fnmatch_lines([f"*{nodes[2]}:{path}: {path} is not a mount point on {nodes[2]}*"])
    writes = {c["subject"]: c["message"] for c in checks(record, "sequential_write")}
    assert "is ext4 from" in writes[f"{nodes[0]}:{path}"] and "not nfs4 as the inventory states" in writes[f"{nodes[0]}:{path}"]
    # nfs4 is a shared type, so the aggregate is attempted and errors on the first node that lacks it
    (aggregate,) = checks(record, "aggregate_write")
    assert aggregate["outcome"] == "error" and "not nfs4 as the inventory states" in aggregate["message"]


def test_memory_or_no_odirect_errors_unless_the_profile_says_direct_false(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:2]]
    in_memory, no_direct = mounts.tmpfs(nodes), mounts.ramfs(nodes)
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml", nodes=nodes, extra={"storage": {"mounts": [in_memory, no_direct]}}
    )
    result, record = run_fabric(pytester, inventory, "-k", "mount or sequential_write")
    result.assert_outcomes(passed=4, errors=4)  # the mounts are as stated; no write counted the page cache
    by_subject = {c["subject"]: c["message"] for c in checks(record, "sequential_write")}
    for node in nodes:
        assert "is tmpfs" in by_subject[f"{node}:{in_memory}"] and "even O_DIRECT measures RAM" in by_subject[f"{node}:{in_memory}"]
        refused = by_subject[f"{node}:{no_direct}"]
        assert "refused O_DIRECT" in refused and "does not support O_DIRECT" in refused
        assert "set direct: false for storage.sequential_write" in refused

    result, record = run_fabric(pytester, inventory, "-k", "sequential_write", "--expect", "storage.sequential_write.direct=false")
    result.assert_outcomes(passed=4)
    writes = checks(record, "sequential_write")
    assert {c["extra"]["io"] for c in writes} == {"buffered"}
    assert all("buffered (direct: false), ended by fsync" in c["message"] for c in writes)


def test_a_read_on_a_shared_mount_reads_files_another_node_laid_out(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:3]]
    path = mounts.shared(nodes)
    inventory = inventory_for(simcluster, pytester, nodes, {"path": path, "fstype": "ext4", "shared": True})
    result, record = run_fabric(
        pytester, inventory, "-k", "sequential_read or random_read_iops", f"--evidence-dir={pytester.path / 'evidence'}"
    )
    result.assert_outcomes(passed=6)
    for check in checks(record, "sequential_read") + checks(record, "random_read_iops"):
        reader = check["subject"].split(":")[0]
        layout = [e for e in check["evidence"] if "--create_only=1" in e["command"]]
        assert len(layout) == 1 and layout[0]["node"] != reader, check["evidence"]
        fio_runs = [e for e in check["evidence"] if e["command"].startswith("fio ")]
        assert [e["node"] for e in fio_runs] == [layout[0]["node"], reader]
        assert "--allow_file_create=0" in fio_runs[1]["command"]  # fio could not lay out files of its own
        (seen,) = [e for e in check["evidence"] if e["command"].startswith("stat ")]
        listed = (pytester.path / seen["stdout_file"]).read_text()  # before the read, the reader sees the files
        assert seen["node"] == reader and "pytest-fabric-" in listed and "16777216 bytes" in listed
        assert check["extra"]["read_from"] == {"laid_out_by": layout[0]["node"], "cache": "other node"}
        assert f"laid out by {layout[0]['node']} on the shared mount; {reader} never wrote them" in check["message"]


def test_a_node_local_disk_drops_the_cache_before_reading_and_has_no_aggregate(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    nodes = [n.name for n in simcluster.nodes[:2]]
    path = mounts.local(nodes)
    inventory = inventory_for(simcluster, pytester, nodes, path)  # ext4: node-local by its type
    result, record = run_fabric(pytester, inventory, "-k", "sequential_read or checkpoint_write or aggregate_write")
    result.assert_outcomes(passed=4, skipped=1)
    for check in checks(record, "sequential_read"):
        reader = check["subject"].split(":")[0]
        assert {e["node"] for e in check["evidence"]} == {reader}
        (dropped,) = [e for e in check["evidence"] if "drop_caches" in e["command"]]
        assert dropped["exit_code"] == 0 and dropped["command"].startswith("sync -f ")
        assert check["extra"]["read_from"] == {"laid_out_by": reader, "cache": "dropped"}
        assert "then its page cache dropped" in check["message"]
    for check in checks(record, "checkpoint_write"):
        (run,) = [e for e in check["evidence"] if e["command"].startswith("fio ")]
        assert all(flag in run["command"] for flag in ("--numjobs=2", "--direct=0", "--end_fsync=1"))
        assert check["extra"]["io"] == "buffered" and check["extra"]["writers"] == 2
    (aggregate,) = checks(record, "aggregate_write")
    assert aggregate["outcome"] == "skipped" and "runs only on shared mounts" in aggregate["message"]
    assert f"{path} is ext4, a node-local filesystem" in aggregate["message"]
