"""A TCP pair's witness on canned nodes: counters that did not grow do not back iperf3's bytes.

The interface counters answer the same before and after (MockTransport answers a command the same
each time): whatever iperf3 claims never crossed the interface, so the pair is uncorroborated on
the client, whose iperf3 printed the figure. With the witness off the same pair passes on iperf3's word.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pytest_fabric.config.inventory import Node
from pytest_fabric.judge import corroboration
from pytest_fabric.probes import tcp
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.transport.pool import ConnectionPool

IPERF3 = Path(__file__).resolve().parents[1] / "data" / "iperf3" / "json-client-P4-loopback-3.12.json"
SETTINGS = tcp.TcpSettings(streams=2, duration_s=1)


def _transport(name: str, address: str) -> MockTransport:
    return MockTransport(name, {
        r"^ip -o addr show$": f"4: eth0    inet {address}/24 brd 10.1.0.255 scope global eth0\n",
        r"^d=/sys/class/net/eth0;": "type 1\nspeed 100000\n",
        r"numa_node": "1\n",
        r"ss -Hltn": "LISTEN 0      5            *:5201            *:*\n",
        r"iperf3 -s": "",
        r"iperf3 -c": IPERF3.read_text(),
        r"^cd /sys/class/net/eth0/statistics && ": "tx_bytes 1000\nrx_bytes 2000\n",
    })


def _with_counters() -> NodePair:
    transports = {name: _transport(name, f"10.1.0.{name[-1]}") for name in ("gpu01", "gpu02")}
    pool = ConnectionPool(lambda name: transports[name])
    a, b = (NodeHandle(Node(name=n, host=f"10.1.0.{n[-1]}", data_address=f"10.1.0.{n[-1]}"), pool) for n in transports)
    return NodePair(a, b, 0, 0)


def test_counters_that_did_not_grow_leave_the_claim_uncorroborated_on_the_client() -> None:
    settings = dataclasses.replace(SETTINGS, corroborate=True, witness=True)
    measured = tcp.measure_pair(_with_counters(), settings)
    assert measured.missing is not None and measured.missing.startswith("uncorroborated on gpu01: ")
    found = measured.extra["corroborations"]
    witnessed = [c for c in found if c["witness"] == "interface counters"]
    assert [c["status"] for c in witnessed] == [corroboration.UNCORROBORATED] * 2
    assert {c["node"] for c in witnessed} == {"gpu01"} and witnessed[1]["detail"].startswith("gpu02 eth0 rx_bytes")
    assert {c["status"] for c in found if c["witness"] == "internal"} == {corroboration.AGREES}


def test_without_the_witness_the_same_pair_stands_on_its_tool() -> None:
    measured = tcp.measure_pair(_with_counters(), dataclasses.replace(SETTINGS, corroborate=True))
    assert measured.missing is None
    assert {c["witness"] for c in measured.extra["corroborations"]} == {"internal", "duration"}


def test_the_senders_unsent_buffer_is_not_held_against_it() -> None:
    # iperf3 counts what it wrote into the socket; what is still buffered when the test ends is
    # never sent. On a 1 s run over a 100 Mbit/s link that was 3-6% more than tx_bytes grew, and
    # an honest pair failed as uncorroborated. The bytes the receiver read are what must have left.
    sent, received = 12_500_000, 11_900_000
    before = [tcp.PortBytes("gpu01 eth0", 0, 0, None, None), tcp.PortBytes("gpu02 eth0", 0, 0, None, None)]
    after = [tcp.PortBytes("gpu01 eth0", 12_000_000, 0, None, None),
             tcp.PortBytes("gpu02 eth0", 0, 12_000_000, None, None)]
    assert sent > after[0].sent * (1 + corroboration.COUNTER_TOLERANCE)  # the old comparison failed
    found = tcp._counter_findings("gpu01", before, after, received)
    assert [c.status for c in found] == [corroboration.AGREES] * 2, [c.detail for c in found]
