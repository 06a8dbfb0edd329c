"""Storage and egress checks, end to end, against the simulated cluster.

Egress targets are a local HTTP server on the cluster bridge (started here, stopped
afterwards), so every byte stays between the root namespace and the node namespaces.
The "shared mount" is one host directory bound at the same path inside every node's mount
namespace (tests/simcluster/mounts.py); a mount missing on one node is that path left
unmounted there.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from simcluster import NodeBreaker, SimCluster
from simcluster.mounts import SimMounts

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-storage-egress.yaml"
FILE_NAME = "20MB.bin"
FILE_BYTES = 20 * 10**6
# Every node's link during the egress runs (tc tbf, Mbit/s), and the link of the node that must fail.
# The profile's download and upload floors are 40% of LINK_MBIT: a node at LINK_MBIT clears them by
# 2.5x however loaded the machine is (8 nodes at once move 800 Mb/s, a fraction of what a loaded
# 2-core machine carries), and one at SLOW_MBIT cannot reach them (tbf caps it at half). Unshaped,
# 8 nodes at once had to move 8 x 300 Mb/s through this process's HTTP server: at load ~17 one
# fell under its floor.
LINK_MBIT = 100
SLOW_MBIT = 20


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class _Handler(SimpleHTTPRequestHandler):
    """Serves the directory it is given, a single ``Range: bytes=A-B`` as a real server does (206;
    http.server itself ignores ranges); takes PUT uploads and throws the bytes away."""

    server: _TargetServer

    def do_GET(self) -> None:
        wanted = _RANGE.fullmatch(self.headers.get("Range", "").strip())
        path = Path(self.translate_path(self.path))
        if wanted is None or not path.is_file():
            super().do_GET()
            return
        size = path.stat().st_size
        first, last = int(wanted[1]), min(int(wanted[2] or size - 1), size - 1)
        if first >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with path.open("rb") as file:
            file.seek(first)
            body = file.read(last - first + 1)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        with self.server.lock:
            self.server.ranged_bytes.append(len(body))

    def do_PUT(self) -> None:
        remaining = int(self.headers.get("Content-Length", "0"))
        while remaining > 0:
            chunk = self.rfile.read(min(remaining, 1 << 20))
            if not chunk:
                break
            remaining -= len(chunk)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # keep the test output clean
        pass


class _TargetServer(ThreadingHTTPServer):
    """A listen backlog like a real server's: every node connects at once in a wave, and
    socketserver's default of 5 drops SYNs past it, which reads as a 1 s connect (SYN retry)."""

    request_queue_size = 128

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.lock = threading.Lock()
        self.ranged_bytes: list[int] = []  # each Range answer's body, as sent


class _IgnoresRanges(_Handler):
    """A server that does not serve ranges (http.server's own GET): a whole file, HTTP 200, whatever is asked."""

    def do_GET(self) -> None:
        SimpleHTTPRequestHandler.do_GET(self)


@pytest.fixture(scope="module")
def http_base(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``http://<bridge>:<port>``: a server with a 20 MB file, reachable from every node."""
    root = tmp_path_factory.mktemp("egress-target")
    (root / FILE_NAME).write_bytes(b"\0" * FILE_BYTES)
    def handler(*a: Any) -> _Handler:
        return _Handler(*a, directory=str(root))

    server = _TargetServer((simcluster.bridge_address, 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="egress-target", daemon=True)
    thread.start()
    try:
        yield f"http://{simcluster.bridge_address}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.fixture
def mounts(simcluster: SimCluster) -> Iterator[SimMounts]:
    with SimMounts(simcluster) as made:
        yield made


def closed_port(address: str) -> int:
    """A port on ``address`` where nothing listens (bound, then released)."""
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


def run_fabric(pytester: pytest.Pytester, inventory: Path, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA", *args,
        timeout=180,
    )


def test_healthy_cluster_passes_every_storage_and_egress_check(
    pytester: pytest.Pytester, simcluster: SimCluster, http_base: str, mounts: SimMounts, break_node: NodeBreaker
) -> None:
    url = f"{http_base}/{FILE_NAME}"
    drop = f"{http_base}/drop"  # takes PUTs; a GET of it answers 404, as a real drop URL does
    shared = mounts.shared()
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml",
        extra={"storage": {"mounts": [{"path": shared, "shared": True}]},
               "egress": {"targets": [url, {"url": drop, "upload": True}]}},
    )
    record = pytester.path / "record.json"
    with contextlib.ExitStack() as links:
        for node in simcluster.nodes:
            links.enter_context(break_node.shaped(node, LINK_MBIT))
        result = run_fabric(pytester, inventory, "-m", "storage or egress", "-k", "not sequential",
                            f"--conformance-json={record}")
    n = len(simcluster.nodes)
    # every transfer's figure is what its node's link carried: at most LINK_MBIT, above the floor
    transfers = [c for c in json.loads(record.read_text())["checks"]
                 if c["check"] in ("download", "upload") and c["outcome"] != "skipped"]
    assert len(transfers) == 2 * n
    for check in transfers:
        assert check["measured"]["unit"] == "Mb/s" and 0.4 * LINK_MBIT <= check["measured"]["value"] <= LINK_MBIT, check
    # per node: mount, random_read_iops, checkpoint_write, dns_resolve and connect_latency of both targets,
    # download of the file, upload to the drop URL; aggregate_write once for the cluster.  The upload
    # target is not downloaded, the file not uploaded to.
    result.assert_outcomes(passed=9 * n + 1, skipped=2 * n)
    first, where = simcluster.nodes[0].name, http_base.removeprefix("http://")
    # Two URLs on one host are two subjects named by what they are, not the host twice.
    for line in (f"PASSED *test_upload[[]{first}:{where}/drop]*", f"PASSED *test_download[[]{first}:{where}/{FILE_NAME}]*",
                 f"SKIPPED *{drop} is an upload target (upload: true): it is uploaded to, not downloaded",
                 "PASSED *test_aggregate_write"):
        result.stdout.fnmatch_lines([line])
    # nothing left behind on the shared mount or running on the nodes
    assert simcluster.exec(simcluster.nodes[0], ["ls", "-A", shared]).stdout == ""
    for node in simcluster.nodes:
        assert simcluster.processes(node) == [], f"{node.name} still runs {simcluster.processes(node)}"


def test_shaped_node_fails_download_and_only_it(
    pytester: pytest.Pytester, simcluster: SimCluster, http_base: str, break_node: NodeBreaker
) -> None:
    shaped = simcluster.nodes[3].name
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml", extra={"egress": {"targets": [f"{http_base}/{FILE_NAME}"]}}
    )
    with contextlib.ExitStack() as links:
        for node in simcluster.nodes:
            links.enter_context(break_node.shaped(node, SLOW_MBIT if node.name == shaped else LINK_MBIT))
        # 2 MiB: the slow node's 20 MB would take 8 s
        result = run_fabric(pytester, inventory, "-k", "download", "--expect", "egress.download.bytes=2 MiB")
    result.assert_outcomes(passed=len(simcluster.nodes) - 1, failed=1)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert len(failed) == 1 and shaped in failed[0]
    result.stdout.fnmatch_lines([f"*{shaped}:*: measured * Mb/s (-*%), does not meet >= 40 Mb/s; curl download *"])


def test_unreachable_target_fails_and_missing_curl_errors(
    pytester: pytest.Pytester, simcluster: SimCluster, http_base: str
) -> None:
    dead = f"http://{simcluster.bridge_address}:{closed_port(simcluster.bridge_address)}/x.bin"
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", extra={"egress": {"targets": [dead]}})
    no_curl = simcluster.nodes[0]
    simcluster.install_tool(no_curl, "curl", 'echo "bash: line 1: curl: command not found" >&2\nexit 127\n')
    try:
        result = run_fabric(pytester, inventory, "-k", "connect_latency or download")
    finally:
        simcluster.remove_tool(no_curl, "curl")
    n = len(simcluster.nodes)
    # Cannot connect to a target the inventory names: the egress does not work, a failure.
    # No curl on a node: the check could not measure, an error that says what to install.
    result.assert_outcomes(failed=n + n - 1, errors=1)
    result.stdout.fnmatch_lines([
        f"*cannot connect to {simcluster.bridge_address}:* from node02: connection refused",
        f"*cannot download from {dead} on node02: curl: (7) Failed to connect*",
        f"*node {no_curl.name}: curl: command not found*",
        f"*fix: install curl on {no_curl.name}*",
    ])
    assert "/dev/tcp" not in result.stdout.str()  # the tool's words, not the shell's


def test_mount_missing_on_one_node_fails_that_node_only(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts
) -> None:
    lacking = simcluster.nodes[5]
    path = mounts.shared([node for node in simcluster.nodes if node is not lacking])
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml", extra={"storage": {"mounts": [{"path": path, "shared": True}]}}
    )
    result = run_fabric(pytester, inventory, "-k", "mount or checkpoint_write or aggregate_write")
    assert simcluster.exec(simcluster.nodes[0], ["ls", "-A", path]).stdout == "", "fio work directories were left behind"
    n = len(simcluster.nodes)
    # the mount check fails for that node only; its checkpoint_write and the cluster-level aggregate
    # error naming it (they did not measure the storage the inventory names)
    result.assert_outcomes(passed=2 * (n - 1), failed=1, errors=2)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert len(failed) == 1 and f"test_mount[{lacking.name}:{path}]" in failed[0]
    result.stdout.fnmatch_lines([f"*{lacking.name}:{path}: {path} is not a mount point on {lacking.name}: it is a directory on /*"])
    errors = [line for line in result.outlines if line.startswith("ERROR") and "test_" in line]
    assert len(errors) == 2 and all("test_checkpoint_write[" + lacking.name in e or "test_aggregate_write" in e for e in errors)


class _CountingServer(_TargetServer):
    """A target that counts the GETs it is serving at one moment, as a mirror's connection limit would.

    Each GET waits ``hold_s`` before it answers, so transfers that run together overlap for certain
    on a loaded machine: the peak is the server's own count, not a reading of anyone's clock.
    """

    hold_s = 0.4

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.in_flight = self.peak = self.served = 0


class _CountingHandler(_Handler):
    server: _CountingServer

    def do_GET(self) -> None:
        with self.server.lock:
            self.server.in_flight += 1
            self.server.peak = max(self.server.peak, self.server.in_flight)
        try:
            time.sleep(self.server.hold_s)
            super().do_GET()
        finally:
            with self.server.lock:
                self.server.in_flight -= 1
                self.server.served += 1


@pytest.fixture
def counting_target(simcluster: SimCluster, tmp_path: Path) -> Iterator[tuple[str, _CountingServer]]:
    (tmp_path / "1MB.bin").write_bytes(b"\0" * 10**6)
    server = _CountingServer((simcluster.bridge_address, 0), lambda *a: _CountingHandler(*a, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, name="counting-target", daemon=True)
    thread.start()
    try:
        yield f"http://{simcluster.bridge_address}:{server.server_address[1]}/1MB.bin", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_downloads_from_six_nodes_never_exceed_egress_concurrency(
    pytester: pytest.Pytester, simcluster: SimCluster, counting_target: tuple[str, _CountingServer]
) -> None:
    url, server = counting_target
    nodes = simcluster.nodes[:6]
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml", nodes=nodes, extra={"egress": {"targets": [url], "concurrency": 2}}
    )
    record = pytester.path / "record.json"
    # --fabric-fanout far above the cap: the cap is the server's, not the controller's.
    result = run_fabric(pytester, inventory, "-k", "download", "--fabric-fanout", "64",
                        "--expect", "egress.download.min=1 Mb/s", f"--conformance-json={record}")
    result.assert_outcomes(passed=len(nodes))
    assert server.served == len(nodes)
    assert server.peak == 2, f"{server.peak} downloads at once"  # capped, and in parallel up to the cap
    where = url.removeprefix("http://").split("/")[0]
    checks = json.loads(record.read_text())["checks"]
    assert {c["extra"]["egress_cap"]["concurrency"] for c in checks} == {2}
    said = f"at most 2 downloads to {where} at once (egress.concurrency 2 in the inventory; --fabric-fanout 64)"
    assert all(said in c["message"] for c in checks), checks[0]["message"]


@pytest.fixture
def ranged_and_ignoring(simcluster: SimCluster, tmp_path: Path) -> Iterator[tuple[str, _TargetServer, str]]:
    """The 20 MB file from a server that serves ranges and from one that ignores them (two ports)."""
    (tmp_path / FILE_NAME).write_bytes(b"\0" * FILE_BYTES)
    servers = [_TargetServer((simcluster.bridge_address, 0), lambda *a, h=h: h(*a, directory=str(tmp_path)))
               for h in (_Handler, _IgnoresRanges)]
    threads = [threading.Thread(target=s.serve_forever, name="egress-target", daemon=True) for s in servers]
    for thread in threads:
        thread.start()
    try:
        ranged, ignoring = (f"http://{simcluster.bridge_address}:{s.server_address[1]}/{FILE_NAME}" for s in servers)
        yield ranged, servers[0], ignoring
    finally:
        for server, thread in zip(servers, threads):
            server.shutdown()
            server.server_close()
            thread.join(10)


def test_a_bounded_download_moves_its_bytes_and_says_when_the_server_ignores_the_range(
    pytester: pytest.Pytester, simcluster: SimCluster, ranged_and_ignoring: tuple[str, _TargetServer, str]
) -> None:
    ranged, server, ignoring = ranged_and_ignoring
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes,
                                           extra={"egress": {"targets": [ranged, ignoring]}})
    record = pytester.path / "record.json"
    result = run_fabric(pytester, inventory, "-k", "download", "--expect", "egress.download.bytes=4 MiB",
                        "--expect", "egress.download.min=1 Mb/s", f"--conformance-json={record}")
    # a server without ranges is not the node's fault: measured and judged, and said
    result.assert_outcomes(passed=2 * len(nodes))
    checks = json.loads(record.read_text())["checks"]
    by_target: dict[str, list[dict[str, Any]]] = {ranged: [], ignoring: []}
    for check in checks:
        by_target[ranged if ranged.removeprefix("http://") in check["nodeid"] else ignoring].append(check)
    assert server.ranged_bytes == [4 * 2**20] * len(nodes)  # what the server sent, by its own count
    for check in by_target[ranged]:
        assert (check["extra"]["http_code"], check["extra"]["bytes"]) == (206, 4 * 2**20)
        assert "range" not in check["message"]
    for check in by_target[ignoring]:
        assert (check["extra"]["http_code"], check["extra"]["bytes"]) == (200, FILE_BYTES)
        assert ("the server ignored the range (HTTP 200, not 206): the whole 19.1 MiB file was downloaded, "
                "not the 4.0 MiB asked for") in check["message"]
    assert len(by_target[ignoring]) == len(nodes)


def _fio_logger(log: Path) -> str:
    """fio on the node, its start and end written to a log every node sees (/var/tmp is the host's)."""
    return (
        f'echo "start $(hostname) $(date +%s.%N)" >> {log}\n'
        "sleep 0.5\n"  # so that runs which are together overlap whatever the machine's load
        '/usr/bin/fio "$@"; rc=$?\n'
        f'echo "end $(hostname) $(date +%s.%N)" >> {log}\n'
        "exit $rc\n"
    )


def _most_at_once(log: Path) -> int:
    """The most fio runs going on at one moment, by the nodes' own log."""
    events = sorted((float(stamp), 1 if kind == "start" else -1)
                    for kind, _node, stamp in (line.split() for line in log.read_text().splitlines()))
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    return peak


@pytest.mark.parametrize(("measured", "at_once"), [("together", 4), ("alone", 1)])
def test_a_shared_mount_measured_together_is_one_wave_and_alone_one_node_at_a_time(
    pytester: pytest.Pytester, simcluster: SimCluster, mounts: SimMounts, measured: str, at_once: int
) -> None:
    nodes = simcluster.nodes[:4]
    path = mounts.shared(nodes)
    logdir = Path("/var/tmp") / f"pytest-fabric-fio-{uuid.uuid4().hex[:8]}"
    logdir.mkdir()
    log = logdir / "fio.log"
    profile = pytester.path / "together.yaml"
    profile.write_text(
        "name: sim-shared-write\nstorage:\n"
        f"  sequential_write: {{min: 1 MB/s, size: 4 MiB, direct: false, measured: {measured}}}\n"
    )
    inventory = simcluster.write_inventory(pytester.path / "inventory.yaml", nodes=nodes,
                                           extra={"storage": {"mounts": [{"path": path, "shared": True}]}})
    for node in nodes:
        simcluster.install_tool(node, "fio", _fio_logger(log))
    try:
        record = pytester.path / "record.json"
        result = pytester.runpytest_subprocess(
            "--cluster", str(inventory), "--profile", str(profile), "-p", "no:cacheprovider", "-rA",
            "-k", "sequential_write", f"--conformance-json={record}", timeout=180,
        )
        most = _most_at_once(log)
    finally:
        for node in nodes:
            simcluster.remove_tool(node, "fio")
        shutil.rmtree(logdir, ignore_errors=True)
    result.assert_outcomes(passed=len(nodes))
    assert most == at_once
    checks = json.loads(record.read_text())["checks"]
    assert {c["extra"]["measured"]["mode"] for c in checks} == {measured}
    said = {"together": f"measured together (storage.sequential_write.measured: together): 4 node(s) on the shared "
                        f"mount {path} at once, so the figure is this node's share",
            "alone": f"measured alone (storage.sequential_write.measured: alone): one node at a time on the shared "
                     f"mount {path}"}[measured]
    assert all(said in c["message"] for c in checks), checks[0]["message"]
