"""TCP's 'line': the data rate of the interface TCP runs over, an IPoIB line share is a usage warning,
and the message names the interfaces measured (MockTransport, canned sysfs and iperf3 output)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.probes import tcp
from pytest_fabric.run.cluster import NodeHandle, NodePair
from pytest_fabric.session.usage import FabricUsageWarning
from pytest_fabric.transport.mock import MockTransport
from pytest_fabric.transport.pool import ConnectionPool

IPERF3 = Path(__file__).resolve().parents[1] / "data" / "iperf3" / "json-client-P4-loopback-3.12.json"


def iperf3_json(gbps: float) -> str:
    """A real iperf3 -J client document whose receiver got ``gbps``."""
    doc = json.loads(IPERF3.read_text())
    doc["end"]["sum_received"]["bits_per_second"] = gbps * 1e9
    return json.dumps(doc)


def sysfs(kind: str, speed_mbps: int, ib_rate: str | None = None) -> str:
    return f"type {kind}\nspeed {speed_mbps}\n" + (f"ibrate {ib_rate}\n" if ib_rate else "")


def node(name: str, address: str, interface: str, link: str, *, data_address: bool = True, gbps: float = 30.0) -> NodeHandle:
    transport = MockTransport(name, {
        r"^ip -o addr show$": f"1: lo    inet 127.0.0.1/8 scope host lo\n4: {interface}    inet {address}/24 brd 10.1.0.255 scope global {interface}\n",
        rf"^d=/sys/class/net/{interface};": link,
        r"numa_node": "",
        r"ss -Hltn": "LISTEN 0      5            *:5201            *:*\n",
        r"iperf3 -s": "",
        r"iperf3 -c": iperf3_json(gbps),
    })
    spec = Node(name=name, host=address, data_address=address) if data_address else Node(name=name, host=address)
    return NodeHandle(spec, ConnectionPool(lambda _name: transport))


def pair(link: str, *, data_address: bool = True, interface: str = "ib0") -> NodePair:
    return NodePair(node("gpu01", "10.1.0.1", interface, link, data_address=data_address),
                    node("gpu02", "10.1.0.2", interface, link, data_address=data_address), 0, 0)


NINETY_PERCENT_LINE = Expectation("inter_node", "tcp_throughput", Op.MIN, parse_quantity("90% line"), "inter_node.tcp_throughput.min")
SETTINGS = tcp.TcpSettings(streams=2, duration_s=1)


@pytest.mark.parametrize(("speed", "ib_rate", "data_gbps"), [
    (40000, "40 Gb/sec (4X QDR)", 32),  # 8b/10b: 40 signalled, 32 of data
    (56000, "56 Gb/sec (4X FDR)", 54.55),  # 64b/66b on 14.0625 Gb/s lanes
    (40000, "40 Gb/sec (4X FDR10)", 40),  # 64b/66b on 10.3125: the 40 is data
    (200000, "200 Gb/sec (4X HDR)", 200),  # HDR reports its data rate
])
def test_ipoib_line_is_the_infiniband_data_rate(speed: int, ib_rate: str, data_gbps: float) -> None:
    line, rates, _, text = tcp.line_rate(pair(sysfs("32", speed, ib_rate)))
    assert line is not None and float(line.to("Gb/s")) == pytest.approx(data_gbps, abs=0.01)
    assert all(r.ipoib for r in rates) and "gpu01:ib0 (IPoIB, " + ib_rate in text


def test_a_line_share_over_ipoib_warns_and_is_judged_on_the_data_rate() -> None:
    # 30 Gb/s over QDR: 90% of the reported 40 would be 36 and fail; of the 32 Gb/s of data it is 28.8.
    with pytest.warns(FabricUsageWarning, match="TCP runs over IPoIB"):
        measured = tcp.measure_pair(pair(sysfs("32", 40000, "40 Gb/sec (4X QDR)")), SETTINGS, need_line_rate=True)
    verdict = judge("gpu01<->gpu02", measured, NINETY_PERCENT_LINE)
    assert verdict.passed, verdict.message
    assert ">= 28.8 Gb/s" in verdict.message and "data rate 32 Gb/s" in verdict.message
    assert "gpu01:ib0" in measured.detail and "gpu02:ib0" in measured.detail


def test_an_ipoib_port_whose_speed_is_not_named_is_an_error_not_a_guess() -> None:
    with pytest.raises(tcp.MeasurementError, match=r"ib0 is IPoIB .*names no speed"):
        tcp.measure_pair(pair(sysfs("32", 40000)), SETTINGS, need_line_rate=True)


def test_a_line_share_over_ethernet_does_not_warn(recwarn: pytest.WarningsRecorder) -> None:
    measured = tcp.measure_pair(pair(sysfs("1", 100000), interface="ens5"), SETTINGS, need_line_rate=True)
    assert not [w for w in recwarn if issubclass(w.category, FabricUsageWarning)]
    assert measured.line_rate == parse_quantity("100 Gb/s")


def test_without_data_address_the_message_names_the_interface_measured() -> None:
    measured = tcp.measure_pair(pair(sysfs("1", 25000), data_address=False, interface="eno1"), SETTINGS)
    assert "measured over gpu01:eno1 25 Gb/s -> gpu02:eno1 25 Gb/s" in measured.detail, measured.detail
    assert "no data_address for gpu01, gpu02" in measured.detail
