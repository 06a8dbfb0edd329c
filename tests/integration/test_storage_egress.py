"""Storage and egress checks, end to end, against the simulated cluster.

Egress targets are a local HTTP server on the cluster bridge (started here, stopped
afterwards), so every byte stays between the root namespace and the node namespaces.
The "shared mount" is one host directory bound at the same path inside every node's mount
namespace (tests/simcluster/mounts.py); a mount missing on one node is that path left
unmounted there.
"""

from __future__ import annotations

import socket
import threading
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


class _Handler(SimpleHTTPRequestHandler):
    """Serves the directory it is given; takes PUT uploads and throws the bytes away."""

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
    pytester: pytest.Pytester, simcluster: SimCluster, http_base: str, mounts: SimMounts
) -> None:
    url = f"{http_base}/{FILE_NAME}"
    drop = f"{http_base}/drop"  # takes PUTs; a GET of it answers 404, as a real drop URL does
    shared = mounts.shared()
    inventory = simcluster.write_inventory(
        pytester.path / "inventory.yaml",
        extra={"storage": {"mounts": [{"path": shared, "shared": True}]},
               "egress": {"targets": [url, {"url": drop, "upload": True}]}},
    )
    result = run_fabric(pytester, inventory, "-m", "storage or egress", "-k", "not sequential")
    n = len(simcluster.nodes)
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
    with break_node.shaped(shaped, 100):
        result = run_fabric(pytester, inventory, "-k", "download")
    result.assert_outcomes(passed=len(simcluster.nodes) - 1, failed=1)
    failed = [line for line in result.outlines if line.startswith("FAILED")]
    assert len(failed) == 1 and shaped in failed[0]
    result.stdout.fnmatch_lines([f"*{shaped}:*: measured * Mb/s (-*%), does not meet >= 300 Mb/s; curl download *"])


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
