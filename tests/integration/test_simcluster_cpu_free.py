"""The cpu-free simulated cluster (SimCluster(cpu_free=True)): iperf3 is a stand-in that refuses
what iperf3 3.12 refuses, takes -t asleep and reports what the node's link carries."""

from __future__ import annotations

import json
import resource
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from simcluster import SimCluster, missing_prerequisites
from simcluster.hardware import standin_module

pytestmark = pytest.mark.simcluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimCluster]:
    missing = missing_prerequisites()
    if missing:
        pytest.skip("simulated cluster unavailable: " + "; ".join(missing))
    with SimCluster(3, tmp_path_factory.mktemp("cpufree"), cpu_free=True) as sim:
        yield sim


def _server(cluster: SimCluster, node: str, port: int) -> subprocess.Popen[str]:
    server = cluster.popen(
        node,
        ["iperf3", "-s", "-1", "-p", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 10
    while f":{port} " not in cluster.exec(node, ["ss", "-Hltn"]).stdout:
        assert time.monotonic() < deadline, "stand-in server never listened"
        time.sleep(0.05)
    return server


def _client(cluster: SimCluster, src: str, dst: str, port: int, seconds: int = 1) -> float:
    done = cluster.exec(
        src,
        [
            "iperf3",
            "-c",
            cluster.node(dst).address,
            "-p",
            str(port),
            "-t",
            str(seconds),
            "-P",
            "2",
            "-J",
        ],
        timeout=30,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return float(json.loads(done.stdout)["end"]["sum_received"]["bits_per_second"])


def test_the_ordinary_cluster_keeps_the_real_iperf3(tmp_path: Path) -> None:
    assert not SimCluster(1, tmp_path).cpu_free  # the default; only cpu_free installs a stand-in


def test_unknown_option_is_refused_as_iperf3_does(cluster: SimCluster) -> None:
    done = cluster.exec("node01", ["iperf3", "-c", "10.0.0.1", "--paralel", "4"])
    assert done.returncode == 1
    assert done.stderr.startswith(
        "iperf3: unrecognized option '--paralel'\nUsage: iperf3 [-s|-c host]"
    )


def test_out_of_range_value_is_a_parameter_error(cluster: SimCluster) -> None:
    done = cluster.exec("node01", ["iperf3", "-c", "10.0.0.1", "-t", "90000"])
    assert done.returncode == 1
    assert (
        "iperf3: parameter error - test duration too long (maximum = 86400 seconds)" in done.stderr
    )
    both = cluster.exec("node01", ["iperf3", "-s", "-c", "10.0.0.1"])
    assert "cannot be both server and client" in both.stderr


def test_valid_option_it_does_not_model_is_said_not_ignored(cluster: SimCluster) -> None:
    done = cluster.exec("node01", ["iperf3", "-u", "-c", "10.0.0.1"])
    assert done.returncode == 2
    assert "'u' is valid but not modelled" in done.stderr


def test_refused_port_is_iperf3s_json_error(cluster: SimCluster) -> None:
    done = cluster.exec(
        "node01", ["iperf3", "-c", cluster.node("node02").address, "-p", "5999", "-J"]
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"] == "unable to connect to server: Connection refused"


def test_takes_its_duration_asleep(cluster: SimCluster) -> None:
    server = _server(cluster, "node02", 5301)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    _client(cluster, "node01", "node02", 5301, seconds=2)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    server.communicate(timeout=10)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert wall >= 2.0
    assert cpu < 1.0, f"the client used {cpu:.2f} s of CPU for a 2 s run"


def test_figure_follows_the_link_rate(cluster: SimCluster) -> None:
    with cluster.shaped("node02", 200):
        server = _server(cluster, "node02", 5302)
        shaped = _client(cluster, "node01", "node02", 5302)
        server.communicate(timeout=10)
    assert shaped == pytest.approx(200e6 * standin_module("cpu_free_iperf3").tcp_goodput_share(1500), rel=0.001)
    server = _server(cluster, "node02", 5303)
    unshaped = _client(cluster, "node01", "node02", 5303)
    server.communicate(timeout=10)
    speed = int(
        cluster.exec("node02", ["cat", "/sys/class/net/eth0/speed"]).stdout.strip() or 10000
    )
    assert unshaped == pytest.approx(speed * 1e6 * standin_module("cpu_free_iperf3").tcp_goodput_share(1500), rel=0.001)


def test_two_flows_out_of_one_node_share_its_link(cluster: SimCluster) -> None:
    with cluster.shaped("node01", 300):
        servers = [_server(cluster, "node02", 5304), _server(cluster, "node03", 5305)]
        figures: dict[str, float] = {}
        first = threading.Thread(
            target=lambda: figures.update(a=_client(cluster, "node01", "node02", 5304, 3))
        )
        first.start()
        time.sleep(0.5)  # the second flow starts while the first runs, and sees it
        figures["b"] = _client(cluster, "node01", "node03", 5305, 1)
        first.join()
        for server in servers:
            server.communicate(timeout=10)
    assert figures["b"] == pytest.approx(150e6 * standin_module("cpu_free_iperf3").tcp_goodput_share(1500), rel=0.001)
