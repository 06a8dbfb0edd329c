"""A download bounded by the profile's ``bytes:`` asks for a Range, and says when it got something else;
an upload sends ``bytes``."""

from __future__ import annotations

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes.egress import UPLOAD_BYTES, CurlStats, download, range_outcome, upload
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

URL = "http://10.0.0.9:8080/2GB.bin"
MIB = 2**20


def node_answering(stats_line: str, exit_code: int = 0) -> tuple[NodeHandle, MockTransport]:
    transport = MockTransport("node01", {r"curl ": CannedCommand(stdout=f"\n{stats_line}\n", exit_code=exit_code)})
    return NodeHandle(Node(name="node01", host="10.0.0.1"), ConnectionPool(lambda _name: transport)), transport


def test_a_bounded_download_asks_for_its_first_bytes() -> None:
    node, transport = node_answering(f"pytest-fabric-curl 206 {256 * MIB} 268435456 1.0")
    measured = download(node, URL, 256 * MIB)
    assert f" -r 0-{256 * MIB - 1} " in transport.calls[0]
    assert measured.extra["bytes"] == measured.extra["asked_bytes"] == 256 * MIB
    assert measured.detail == f"curl download {URL} on node01: 256.0 MiB in 1.00 s"  # what was asked: nothing to add


def test_an_unbounded_download_asks_for_the_whole_file() -> None:
    node, transport = node_answering(f"pytest-fabric-curl 200 {20 * MIB} 209715200 0.1")
    measured = download(node, URL)
    assert " -r " not in transport.calls[0] and "asked_bytes" not in measured.extra
    assert "range" not in measured.detail


def test_a_server_that_ignores_the_range_is_still_measured_and_said() -> None:
    node, _ = node_answering(f"pytest-fabric-curl 200 {2 * 2**30} 200000000 10.7")
    measured = download(node, URL, 256 * MIB)
    assert measured.value is not None and float(measured.value.to("B/s")) == 200e6  # the rate over what it moved
    assert ("the server ignored the range (HTTP 200, not 206): the whole 2.0 GiB file was downloaded, "
            "not the 256.0 MiB asked for") in measured.detail


def test_a_server_that_ignores_the_range_of_a_file_cut_at_the_time_limit() -> None:
    node, _ = node_answering(f"pytest-fabric-curl 200 {1200 * MIB} 41943040 30.0", exit_code=28)
    measured = download(node, URL, 256 * MIB)
    assert "1.2 GiB of the whole file was downloaded before the 30 s limit, not the 256.0 MiB asked for" in measured.detail


@pytest.mark.parametrize(
    ("stats", "partial", "said"),
    [
        (CurlStats(206, 20 * MIB, 1e8, 0.2), False, "the file is smaller than bytes (256.0 MiB): all of its 20.0 MiB was downloaded"),
        (CurlStats(206, 20 * MIB, 1e6, 30.0), True, ""),  # cut at the limit: the detail says that already
        (CurlStats(206, 300 * MIB, 1e8, 3.0), False, "the server sent 300.0 MiB, more than the 256.0 MiB range asked for"),
        (CurlStats(206, 256 * MIB, 1e8, 2.7), False, ""),
    ],
)
def test_range_outcome(stats: CurlStats, partial: bool, said: str) -> None:
    assert range_outcome(stats, 256 * MIB, partial) == said


def test_upload_sends_bytes_or_its_default_size() -> None:
    node, transport = node_answering(f"pytest-fabric-curl 201 {8 * MIB} 83886080 0.1")
    upload(node, URL, 8 * MIB)
    upload(node, URL)
    assert transport.calls[0].startswith(f"head -c {8 * MIB} /dev/zero | ")
    assert transport.calls[1].startswith(f"head -c {UPLOAD_BYTES} /dev/zero | ")
