"""Per-node checks run in waves: every node at once, except what shares a resource.

Each node's tool is wrapped by a stand-in that logs when it starts and ends (into a
directory every simulated node sees: nodes share the host's filesystem outside /tmp and
/root), so the test sees real overlap on the nodes, not the controller's idea of it.
"""

from __future__ import annotations

import json
import shutil
import threading
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.mounts import SimMounts

PROFILE = """\
name: sim-waves
egress:
  dns_resolve: {max: 5 s}
  download: {min: 1 Mb/s}
"""


def _logging_wrapper(log: Path, real: str, pause_s: float) -> str:
    """A stand-in that records its start and end on the node around the real tool."""
    return (
        f'echo "start $(hostname) $(date +%s.%N)" >> {log}\n'
        f"sleep {pause_s}\n"
        f'{real} "$@"; rc=$?\n'
        f'echo "end $(hostname) $(date +%s.%N)" >> {log}\n'
        "exit $rc\n"
    )


def intervals(log: Path) -> dict[str, tuple[float, float]]:
    """node -> (start, end) of its tool run, from the wrapper's log."""
    starts: dict[str, float] = {}
    ends: dict[str, float] = {}
    for line in log.read_text().splitlines():
        kind, node, stamp = line.split()
        (starts if kind == "start" else ends)[node] = float(stamp)
    return {node: (starts[node], ends[node]) for node in starts}


def max_overlap(spans: dict[str, tuple[float, float]]) -> int:
    """The most tool runs that were going on at one moment."""
    events = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


class _TargetServer(ThreadingHTTPServer):
    """A listen backlog like a real server's: every node connects at once in a wave, and
    socketserver's default of 5 drops SYNs past it, which reads as a 1 s connect (SYN retry)."""

    request_queue_size = 128


@pytest.fixture
def shared_log() -> Iterator[Path]:
    directory = Path("/var/tmp") / f"pytest-fabric-waves-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    try:
        yield directory / "runs.log"
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def small_file_url(simcluster: SimCluster, tmp_path: Path) -> Iterator[str]:
    (tmp_path / "1MB.bin").write_bytes(b"\0" * 10**6)
    server = _TargetServer((simcluster.bridge_address, 0), lambda *a: _Quiet(*a, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{simcluster.bridge_address}:{server.server_address[1]}/1MB.bin"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def run(pytester: pytest.Pytester, simcluster: SimCluster, targets: list[str], *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", extra={"egress": {"targets": targets}})
    profile = pytester.path / "waves.yaml"
    profile.write_text(PROFILE)
    record = pytester.path / "record.json"
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider",
        f"--conformance-json={record}", *args, timeout=180,
    )
    return result, json.loads(record.read_text())


def test_a_per_node_check_runs_on_every_node_at_once(
    pytester: pytest.Pytester, simcluster: SimCluster, shared_log: Path
) -> None:
    for node in simcluster.nodes:
        simcluster.install_tool(node, "getent", _logging_wrapper(shared_log, "/usr/bin/getent", 1.0))
    try:
        result, record = run(pytester, simcluster, ["localhost"], "-k", "dns_resolve")
    finally:
        for node in simcluster.nodes:
            simcluster.remove_tool(node, "getent")
    n = len(simcluster.nodes)
    result.assert_outcomes(passed=n)
    spans = intervals(shared_log)
    assert len(spans) == n  # each node measured once, not once per test
    assert max_overlap(spans) == n, spans
    assert {c["extra"].get("measured_as") for c in record["checks"]} == {f"all {n} at once"}


def test_downloads_to_one_server_run_together_up_to_egress_concurrency(
    pytester: pytest.Pytester, simcluster: SimCluster, shared_log: Path, small_file_url: str
) -> None:
    """4 nodes, the inventory's default egress.concurrency of 8: all at once (a cap of 2 is in test_storage_egress)."""
    nodes = simcluster.nodes[:4]
    for node in nodes:
        simcluster.install_tool(node, "curl", _logging_wrapper(shared_log, "/usr/bin/curl", 0.3))
    try:
        result, record = run(pytester, simcluster, [small_file_url], "-k", "download and (" + " or ".join(n.name for n in nodes) + ")")
    finally:
        for node in nodes:
            simcluster.remove_tool(node, "curl")
    result.assert_outcomes(passed=len(nodes))
    assert max_overlap(intervals(shared_log)) == len(nodes)
    assert {c["extra"].get("measured_as") for c in record["checks"]} == {f"all {len(nodes)} at once"}


def test_profile_concurrency_lets_k_downloads_run_at_once(
    pytester: pytest.Pytester, simcluster: SimCluster, shared_log: Path, small_file_url: str
) -> None:
    nodes = simcluster.nodes[:4]
    for node in nodes:
        simcluster.install_tool(node, "curl", _logging_wrapper(shared_log, "/usr/bin/curl", 0.5))
    try:
        result, record = run(
            pytester, simcluster, [small_file_url], "-k", "download and (" + " or ".join(n.name for n in nodes) + ")",
            "--expect", "egress.download.concurrency=2",
        )
    finally:
        for node in nodes:
            simcluster.remove_tool(node, "curl")
    result.assert_outcomes(passed=len(nodes))
    assert max_overlap(intervals(shared_log)) == 2
    server = small_file_url.removeprefix("http://").split("/")[0]
    assert {c["extra"].get("measured_as") for c in record["checks"]} == {
        f"2 at a time of {len(nodes)} (egress target {server} is shared)"
    }


def test_fanout_caps_nodes_at_once(pytester: pytest.Pytester, simcluster: SimCluster, shared_log: Path) -> None:
    for node in simcluster.nodes:
        simcluster.install_tool(node, "getent", _logging_wrapper(shared_log, "/usr/bin/getent", 0.5))
    try:
        result, record = run(pytester, simcluster, ["localhost"], "-k", "dns_resolve", "--fabric-fanout", "3")
    finally:
        for node in simcluster.nodes:
            simcluster.remove_tool(node, "getent")
    n = len(simcluster.nodes)
    result.assert_outcomes(passed=n)
    assert max_overlap(intervals(shared_log)) == 3
    assert {c["extra"].get("measured_as") for c in record["checks"]} == {f"3 at a time of {n} (--fabric-fanout 3)"}


def test_ctrl_c_during_a_wave_kills_every_node_command_at_once(
    simcluster: SimCluster, sim_inventory: Path, tmp_path: Path
) -> None:
    """Long foreground commands on every node (a stand-in that would run 300 s) end on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    token = f"300.{uuid.uuid4().int % 10**6:06d}"
    for node in simcluster.nodes:
        simcluster.install_tool(node, "getent", f"sleep {token}\n")
    profile = tmp_path / "waves.yaml"
    profile.write_text(PROFILE.replace("5 s", "600 s"))
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", extra={"egress": {"targets": ["localhost"]}})

    def sleeping() -> list[str]:
        return [n.name for n in simcluster.nodes if any(token in cmd for _, cmd in simcluster.processes(n))]

    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(profile),
         "-p", "no:cacheprovider", "-k", "dns_resolve", "-q"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(sleeping()) < len(simcluster.nodes):
            time.sleep(0.1)
        assert len(sleeping()) == len(simcluster.nodes)
        interrupted = time.monotonic()
        run.send_signal(signal.SIGINT)
        output, _ = run.communicate(timeout=60)
        took = time.monotonic() - interrupted
    finally:
        if run.poll() is None:
            run.kill()
        for node in simcluster.nodes:
            simcluster.remove_tool(node, "getent")
    assert "nterrupt" in output, output[-2000:]
    assert took < 30, f"the run took {took:.0f} s to end after Ctrl-C"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sleeping():
        time.sleep(0.2)
    assert sleeping() == []


STORAGE_PROFILE = """\
name: sim-storage-waves
storage:
  sequential_write: {min: 1 MB/s, size: 8 MiB, direct: false}
"""


@pytest.mark.parametrize("shared", [False, True], ids=["node-local", "shared"])
def test_storage_runs_on_every_node_at_once_but_takes_turns_on_a_shared_mount(
    pytester: pytest.Pytester, simcluster: SimCluster, shared_log: Path, shared: bool
) -> None:
    nodes = simcluster.nodes[:4]
    made = SimMounts(simcluster)
    # A bind of the host's disk: one filesystem every node sees (shared), or one of its own each.
    directory = made.shared(nodes) if shared else made.local(nodes)
    mounts = [{"path": directory, "shared": shared}]
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml", nodes=nodes, extra={"storage": {"mounts": mounts}}
    )
    profile = pytester.path / "storage.yaml"
    profile.write_text(STORAGE_PROFILE)
    for node in nodes:
        simcluster.install_tool(node, "fio", _logging_wrapper(shared_log, "/usr/bin/fio", 0.5))
    try:
        record_path = pytester.path / "record.json"
        result = pytester.runpytest_subprocess(
            "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider",
            "-k", "sequential_write", f"--conformance-json={record_path}", timeout=180,
        )
    finally:
        for node in nodes:
            simcluster.remove_tool(node, "fio")
        made.close()
    result.assert_outcomes(passed=len(nodes))
    record = json.loads(record_path.read_text())
    ran = {c["extra"].get("measured_as") for c in record["checks"] if c["check"] == "sequential_write"}
    if shared:
        assert max_overlap(intervals(shared_log)) == 1
        assert ran == {f"one at a time of {len(nodes)} (shared mount {directory} is shared)"}
    else:
        assert max_overlap(intervals(shared_log)) == len(nodes)
        assert ran == {f"all {len(nodes)} at once"}
