"""aggregate_write on the simulated cluster: nodes of unequal speed writing to one shared mount at once.

The shared mount is one host directory bound into both nodes (tests/simcluster/mounts.py); each
node's processes are in a block-I/O cgroup of its own with a write limit on the host's disk
(tests/simcluster/throttle.py), so node01 writes at up to 40 MB/s and node02 at up to 8 MB/s.
The kernel's count of what each cgroup wrote is evidence that does not come from fio.

Adding the nodes' own rates is what the filesystem did only if every node wrote for the whole
span: with size-based runs node01 would finish its file in a fifth of node02's time and the sum
(48 MB/s) would claim about three times the bytes the mount took over the span. The figure is
the bytes all nodes wrote over the span from the first start to the last end, and so never
claims more than the kernel counted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.fabric_run import fast_and_slow_on_a_shared_mount, run_with_record

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-aggregate.yaml"
FAST, SLOW = 40_000_000, 8_000_000  # bytes/s
RUNTIME_S = 3  # the profile's runtime


def run_fabric(pytester: pytest.Pytester, inventory: Path, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    return run_with_record(pytester, inventory, PROFILE, *args)


def test_nodes_of_unequal_speed_on_one_shared_mount_report_what_it_took_not_the_sum(
    pytester: pytest.Pytester, simcluster: SimCluster
) -> None:
    with fast_and_slow_on_a_shared_mount(pytester, simcluster, FAST, SLOW) as pair:
        fast_node, slow_node, path, fast, slow = pair.fast_node, pair.slow_node, pair.path, pair.fast, pair.slow
        result, record = run_fabric(pytester, pair.inventory, "-k", "aggregate_write",
                                    f"--evidence-dir={pytester.path / 'evidence'}")
        written = fast.written() + slow.written()  # the kernel's count, both nodes, this run
    result.assert_outcomes(passed=1)
    (check,) = [c for c in record["checks"] if c["check"] == "aggregate_write"]
    shared = check["extra"]["shared"][path]
    per_node = check["extra"]["per_node_bytes_per_s"][path]

    # The throttles took effect: node02 wrote at its 8 MB/s, node01 several times faster.
    assert 0.7 * SLOW <= per_node[slow_node.name] <= 1.1 * SLOW, per_node
    assert per_node[fast_node.name] > 3 * per_node[slow_node.name], per_node
    # Both ran time-based, with fio's own engine and depth as the profile says.
    fio_runs = [e for e in check["evidence"] if e["command"].startswith("fio ")]
    assert len(fio_runs) == 2
    runtimes = []
    for run in fio_runs:
        assert all(f in run["command"].split() for f in ("--time_based", f"--runtime={RUNTIME_S}", "--ioengine=libaio",
                                                       "--iodepth=4", "--direct=1")), run["command"]
        (job,) = json.loads((pytester.path / run["stdout_file"]).read_text())["jobs"]
        runtimes.append(job["write"]["runtime"] / 1000)

    # What fio says was written is what the kernel saw written (the throttle counts O_DIRECT writes).
    assert 0.97 * written <= shared["total_bytes"] <= 1.01 * written, (shared, written)
    # The figure is those bytes over a span no shorter than any node's fio run: it never claims
    # more than the mount took. (Adding rates over unequal runtimes breaks exactly this.)
    value = shared["bytes_per_s"]
    assert value * max(runtimes) <= 1.01 * written, (value, runtimes, written)
    assert shared["span_s"] >= max(runtimes)
    # ... and not by much less: the span is the run plus the launches' round trips (under a second
    # here even on a busy machine; a 30 s run makes them a few percent at most).
    assert value >= written / (RUNTIME_S + 2), (value, written, shared)
    assert shared["sum_of_rates_bytes_per_s"] >= value
    assert "judged by all bytes written over the span from the first start to the last end" in check["message"]
