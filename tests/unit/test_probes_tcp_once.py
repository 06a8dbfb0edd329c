"""What a TCP pair asks of its nodes: per-node facts once per run, a pair only its servers, one wait and its clients.

Four nodes on MockTransport, an all-pairs sweep (12 ordered pairs) through ``tcp.measure_pair`` with
the run's ``Once``; each node's command log (``MockTransport.calls``) is counted. Before the facts
went through the run cache, every pair looked up both ends' interface (twice), link rate and NUMA
node again, and polled ``ss`` from the controller.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import netdev, tcp
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.run.once import Once
from pytest_fabric.transport.base import CommandFailed
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

IPERF3 = Path(__file__).resolve().parents[1] / "data" / "iperf3" / "json-client-P4-loopback-3.12.json"
SETTINGS = tcp.TcpSettings(streams=2, duration_s=1)


def _transport(name: str, address: str, *, addr_fails: bool = False) -> MockTransport:
    addr = (CannedCommand(exit_code=1, stderr="ip: cannot open netlink socket") if addr_fails else
            f"1: lo    inet 127.0.0.1/8 scope host lo\n4: eth0    inet {address}/24 brd 10.1.0.255 scope global eth0\n")
    return MockTransport(name, {
        r"^ip -o addr show$": addr,
        r"^ip -o link show dev eth0$": "4: eth0: <BROADCAST,UP> mtu 9000 qdisc mq state UP mode DEFAULT\\    link/ether 00:00:00:00:00:01\n",
        r"^d=/sys/class/net/eth0;": "type 1\nspeed 100000\n",
        r"numa_node": "1\n",
        r"ss -Hltn": "LISTEN 0      5            *:5201            *:*\n",
        r"iperf3 -s": "",
        r"iperf3 -c": IPERF3.read_text(),
    })


def _cluster(n: int, *, broken: str | None = None) -> tuple[list[NodeHandle], dict[str, MockTransport]]:
    transports = {f"gpu0{i}": _transport(f"gpu0{i}", f"10.1.0.{i}", addr_fails=f"gpu0{i}" == broken)
                  for i in range(1, n + 1)}
    pool = ConnectionPool(lambda name: transports[name])
    nodes = [NodeHandle(Node(name=name, host=t_address, data_address=t_address), pool)
             for name, t_address in ((name, f"10.1.0.{name[-1]}") for name in transports)]
    return nodes, transports


def _kind(command: str) -> str:
    for kind, needle in (("interface", "ip -o addr show"), ("link rate", "/sys/class/net/eth0;"),
                         ("numa", "numa_node"), ("ready", "ss -Hltn"), ("server", "iperf3 -s"),
                         ("client", "iperf3 -c"), ("mtu", "ip -o link show")):
        if needle in command:
            return kind
    return command


def test_an_all_pairs_sweep_asks_each_node_its_facts_once() -> None:
    nodes, transports = _cluster(4)
    once = Once()
    pairs = list(itertools.permutations(nodes, 2))
    measured = [tcp.measure_pair(NodePair(a, b, 0, 0), SETTINGS, once=once) for a, b in pairs]
    netdev.mtu(nodes[0], once)  # the MTU check shares the interface lookup

    for name, transport in transports.items():
        asked = Counter(_kind(c) for c in transport.calls)
        # 3 pairs as client and 3 as server per node: the facts once, each pair its own server, wait, client
        assert asked == Counter({"interface": 1, "link rate": 1, "numa": 1, "server": 3, "ready": 3,
                                 "client": 3, **({"mtu": 1} if name == "gpu01" else {})}), name
    # what the message says is kept: both ends' interfaces and rates, the pinning
    assert all("measured over gpu0" in m.detail and "eth0 100 Gb/s -> " in m.detail
               and "pinned to NUMA node 1" in m.detail for m in measured)
    assert len({m.value for m in measured}) == 1


def test_a_node_whose_interface_cannot_be_read_is_an_error_of_that_node_each_time_asked_once() -> None:
    nodes, transports = _cluster(3, broken="gpu02")
    once = Once()
    errors = []
    for a, b in itertools.permutations(nodes, 2):
        if "gpu02" not in (a.name, b.name):
            tcp.measure_pair(NodePair(a, b, 0, 0), SETTINGS, once=once)
            continue
        with pytest.raises(CommandFailed) as caught:
            tcp.measure_pair(NodePair(a, b, 0, 0), SETTINGS, need_line_rate=True, once=once)
        errors.append(caught.value)
    assert len(errors) == 4
    assert all(e.node == "gpu02" and "ip -o addr show" in str(e) and "cannot open netlink socket" in str(e)
               for e in errors)
    assert Counter(_kind(c) for c in transports["gpu02"].calls)["interface"] == 1


def test_without_the_run_cache_every_pair_asks_again() -> None:
    """The probe alone (no ``once``, as an extension may call it) still works, asking each time."""
    nodes, transports = _cluster(2)
    for _ in range(2):
        tcp.measure_pair(NodePair(nodes[0], nodes[1], 0, 0), SETTINGS)
    assert Counter(_kind(c) for c in transports["gpu02"].calls)["interface"] == 4  # line rate + pinning, twice


def test_the_readiness_wait_polls_on_the_node_and_matches_whole_ports() -> None:
    command = tcp.ready_command([5201, 5202])
    assert command.count("ss -Hltn") == 1 and '*":$p "*' in command and "for p in 5201 5202;" in command
