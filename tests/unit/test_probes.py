"""Probes against canned tool output (MockTransport): the right commands, the right numbers, the right errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes import egress, netdev, rdma
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.transport.base import ToolMissing
from pytest_fabric.transport.mock import CannedCommand, MockTransport, UnexpectedCommand
from pytest_fabric.transport.pool import ConnectionPool

DATA = Path(__file__).resolve().parents[1] / "data"

IBSTAT = """CA 'mlx5_0'
\tCA type: MT4123
\tNumber of ports: 1
\tFirmware version: 20.31.1014
\tHardware version: 0
\tNode GUID: 0x0c42a10300aaaa00
\tSystem image GUID: 0x0c42a10300aaaa00
\tPort 1:
\t\tState: Active
\t\tPhysical state: LinkUp
\t\tRate: {rate}
\t\tBase lid: 11
\t\tLMC: 0
\t\tSM lid: 1
\t\tCapability mask: 0x2651e848
\t\tPort GUID: 0x0c42a10300aaaa00
\t\tLink layer: InfiniBand
"""


def handle(transport: MockTransport, address: str = "10.0.0.1") -> NodeHandle:
    return NodeHandle(Node(name=transport.node, host=address), ConnectionPool(lambda name: transport))


def test_mtu_reads_the_interface_holding_the_data_address() -> None:
    node = handle(MockTransport("gpu01", {
        r"^ip -o addr show$": "1: lo    inet 127.0.0.1/8 scope host lo\n2: ens5    inet 10.0.0.1/24 brd 10.0.0.255 scope global ens5\n",
        r"^ip -o link show dev ens5$": "2: ens5: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 qdisc mq state UP mode DEFAULT group default qlen 1000\\    link/ether 0a:00:00:00:00:01 brd ff:ff:ff:ff:ff:ff\n",
    }))
    measured = netdev.mtu(node)
    assert measured.value.value == 9000
    assert "ens5" in measured.detail and len(measured.evidence) == 2


def test_dns_resolve_times_on_the_node_and_fails_a_name_that_does_not_resolve() -> None:
    node = handle(MockTransport("gpu01", {r"getent ahosts mirror\.example\.com": "0 1500000\n", r"getent ahosts nowhere": "2 900\n"}))
    assert egress.dns_resolve(node, "https://mirror.example.com/x").value.display() == "1.5 ms"
    missing = egress.dns_resolve(node, "nowhere.invalid:443")
    assert missing.missing and "did not resolve" in missing.missing and "NXDOMAIN" in missing.missing


def test_a_missing_tool_names_the_package() -> None:
    node = handle(MockTransport("gpu01", {r"^ibstat$": CannedCommand(exit_code=127, stderr="bash: ibstat: command not found")}))
    with pytest.raises(ToolMissing, match="install infiniband-diags on gpu01"):
        rdma.list_ports(node)


def test_rdma_pair_bandwidth_median_per_rail_against_the_line_rate() -> None:
    perftest = (DATA / "perftest" / "ib_write_bw-report_gbits-8M-q4-hdr-constructed.txt").read_text()

    def node(name: str, address: str, rate: int) -> NodeHandle:
        return handle(MockTransport(name, {
            r"^ibstat$": IBSTAT.format(rate=rate),
            r"^ibv_devinfo$": CannedCommand(exit_code=1),
            r"^n=\$\(cat /sys/class/infiniband/mlx5_0/device/numa_node": "-1 numactl",  # no NUMA node
            r"^ss -Hltn": "LISTEN 0 128 0.0.0.0:18515 0.0.0.0:*\n",
            r"^ib_write_bw .* 10\.0\.0\.\d$": perftest,  # client: ends with the server's address
            r"^ib_write_bw ": "",  # server
        }), address)

    a, b = node("gpu01", "10.0.0.1", 200), node("gpu02", "10.0.0.2", 200)
    measured = rdma.pair_bandwidth(NodePair(a, b), rdma.RdmaSettings(repeat=3), link_layer="InfiniBand", expected=1)
    assert measured.line_rate is not None and measured.line_rate.display("Gb/s") == "200 Gb/s"
    assert len(measured.samples) == 3 and "median of 3" in measured.detail
    clients = [c for c in a.transport.calls if c.startswith("ib_write_bw")]  # type: ignore[attr-defined]
    assert clients and all("-d mlx5_0" in c and "--report_gbits" in c and c.endswith("10.0.0.2") for c in clients)
    servers = b.transport.started  # type: ignore[attr-defined]
    assert len(servers) == 3 and not any(s.is_running() for s in servers)


def test_an_unexpected_command_is_an_error_not_a_silent_pass() -> None:
    node = handle(MockTransport("gpu01", {}))
    with pytest.raises(UnexpectedCommand, match="no canned answer"):
        node.run("rm -rf /", timeout=5)
