"""The cpu-free simulated cluster (SimCluster(cpu_free=True)): iperf3 is a stand-in that refuses
what iperf3 3.12 refuses, takes -t asleep and reports what the node's link carries; fio one that
refuses what fio 3.33 refuses, takes its job's time asleep and reports the node's modelled disk."""

from __future__ import annotations

import json
import resource
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster, hardware, missing_prerequisites
from simcluster.hardware import standin_module

from pytest_fabric.parsers import fio as fio_parser
from pytest_fabric.probes import storage
from pytest_fabric.probes.storage import FioSettings

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


# ----------------------------------------------------------------- fio


def _fio_cmd(directory: str, settings: FioSettings, **how: bool) -> str:
    # the storage probe's own command line, so the stand-in is held to what the probe runs
    return storage._fio_command(directory, settings, **how)


def _fio(cluster: SimCluster, node: str, command: str) -> subprocess.CompletedProcess[str]:
    return cluster.exec(node, ["sh", "-c", command], timeout=60)


@pytest.fixture
def fio_dir(cluster: SimCluster) -> Iterator[str]:
    made = cluster.exec("node01", ["mktemp", "-d", "/tmp/pytest-fabric.XXXXXX"], check=True)
    directory = made.stdout.strip()
    yield directory
    cluster.exec("node01", ["rm", "-rf", "--", directory])


def _disk(io: Any) -> float:
    return float(io.bw_bytes_per_s)


_SEQ = {"size_bytes": 64 * 2**20, "block_size_bytes": 2**20, "jobs": 2, "direct": False}


def test_fio_write_and_read_give_the_modelled_disk(cluster: SimCluster, fio_dir: str) -> None:
    rate = hardware.DEFAULT_DISK_MBPS * 1e6
    write = FioSettings(rw="write", fsync_on_close=True, **_SEQ)  # type: ignore[arg-type]
    done = _fio(cluster, "node01", _fio_cmd(fio_dir, write))
    assert done.returncode == 0, done.stderr
    parsed = fio_parser.parse_json(done.stdout)
    assert parsed.version == "3.33"
    assert _disk(parsed.write) == pytest.approx(rate, rel=0.01)
    assert parsed.write.io_bytes == 2 * 64 * 2**20
    sizes = _fio(cluster, "node01", f"stat -c '%n %s' -- {fio_dir}/pytest-fabric-write.*").stdout.split("\n")
    assert sizes[:2] == [f"{fio_dir}/pytest-fabric-write.{i}.0 {64 * 2**20}" for i in range(2)]

    read = FioSettings(rw="read", **_SEQ)  # type: ignore[arg-type]
    laid = _fio(cluster, "node01", _fio_cmd(fio_dir, read, layout=True))
    assert laid.returncode == 0, laid.stderr
    assert fio_parser.parse_json(laid.stdout).read.io_bytes == 0  # create_only measures nothing
    done = _fio(cluster, "node01", _fio_cmd(fio_dir, read, existing=True))
    assert done.returncode == 0, done.stderr
    assert _disk(fio_parser.parse_json(done.stdout).read) == pytest.approx(rate, rel=0.01)

    random = FioSettings(rw="randread", size_bytes=16 * 2**20, block_size_bytes=4096, iodepth=32, direct=False)
    _fio(cluster, "node01", _fio_cmd(fio_dir, random, layout=True))
    done = _fio(cluster, "node01", _fio_cmd(fio_dir, random, existing=True))
    assert done.returncode == 0, done.stderr
    assert fio_parser.parse_json(done.stdout).read.iops == pytest.approx(hardware.DEFAULT_DISK_IOPS, rel=0.01)

    timed = FioSettings(rw="write", runtime_s=1, **_SEQ)  # type: ignore[arg-type]
    done = _fio(cluster, "node01", _fio_cmd(fio_dir, timed))
    assert done.returncode == 0, done.stderr
    io = fio_parser.parse_json(done.stdout).write
    assert io.runtime_ms == 1000 and io.io_bytes == pytest.approx(rate, rel=0.01)


def test_fio_version_is_fio_3_33(cluster: SimCluster) -> None:
    done = _fio(cluster, "node01", "fio --version")
    assert (done.returncode, done.stdout) == (0, "fio-3.33\n")


def test_fio_refuses_an_unknown_option_in_fios_words(cluster: SimCluster, fio_dir: str) -> None:
    done = _fio(cluster, "node01", f"fio --name=x --directory={fio_dir} --bogus --output-format=json")
    assert done.returncode == 1 and done.stdout == ""
    # glibc's getopt line, fio's own, and fio's closest option (as /usr/bin/fio 3.33 prints them)
    assert done.stderr == ("fio: unrecognized option '--bogus'\nfio: unrecognized option '--bogus'\n"
                           "Did you mean bs?\n")


def test_fio_option_it_does_not_model_is_said_not_ignored(cluster: SimCluster, fio_dir: str) -> None:
    done = _fio(cluster, "node01", f"fio --name=x --directory={fio_dir} --size=1m --verify=md5 --output-format=json")
    assert done.returncode == 2
    assert "'--verify' is valid but not modelled by the cpu-free stand-in" in done.stderr


def test_fio_read_of_files_not_laid_out_fails_as_fio_does(cluster: SimCluster, fio_dir: str) -> None:
    read = FioSettings(rw="read", **_SEQ)  # type: ignore[arg-type]
    done = _fio(cluster, "node01", _fio_cmd(fio_dir, read, existing=True))
    assert done.returncode == 2
    assert done.stderr == "fio: file creation disallowed by allow_file_create=0\n" * 2
    assert fio_parser.parse_json(done.stdout).read.io_bytes == 0
    missing = _fio(cluster, "node01", "fio --name=x --directory=/nonexistent --size=1m --output-format=json")
    assert missing.returncode == 1
    assert missing.stderr.startswith("fio: /nonexistent is not a directory\n")


def test_fio_takes_the_modelled_time_asleep(cluster: SimCluster, fio_dir: str) -> None:
    cluster.set_disk("node01", mbps=100)
    try:
        write = FioSettings(rw="write", size_bytes=100 * 10**6, block_size_bytes=2**20, jobs=2, direct=False)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        done = _fio(cluster, "node01", _fio_cmd(fio_dir, write))
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        cluster.set_disk("node01")
    assert done.returncode == 0, done.stderr
    assert _disk(fio_parser.parse_json(done.stdout).write) == pytest.approx(100e6, rel=0.01)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert wall == pytest.approx(2.0, abs=0.5)  # 2 x 100 MB at 100 MB/s
    assert cpu < 0.2 * wall, f"fio used {cpu:.2f} s of CPU in {wall:.2f} s"
