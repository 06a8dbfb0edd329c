"""perfquery on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.perfquery import ERROR_COUNTERS, nonzero_error_counters, parse_perfquery

Read = Callable[[str], str]


def test_hca_extended(corpus_text: Read) -> None:
    (port,) = parse_perfquery(corpus_text("perfquery/hca-edr-extended-counters-lid133.txt"))
    assert (port.kind, port.lid, port.port, port.cap_mask) == ("extended", 133, 1, 0x5A00)
    assert port.counters["PortXmitData"] == 37108676853855
    assert port.counters["PortMulticastRcvPkts"] == 3732373137
    assert port.counters["CounterSelect2"] == 0
    assert set(port.errors) >= {"SymbolErrorCounter", "LinkDownedCounter", "PortRcvErrors", "PortRcvRemotePhysicalErrors",
                                "PortXmitDiscards", "LinkErrorRecoveryCounter"}
    assert all(value == 0 for value in port.errors.values())
    assert nonzero_error_counters([port]) == {}


def test_switch_two_ports(corpus_text: Read) -> None:
    ports = parse_perfquery(corpus_text("perfquery/switch-edr-extended-counters-2ports.txt"))
    assert [(p.lid, p.port) for p in ports] == [(1719, 1), (1719, 2)]
    assert ports[0].counters["PortXmitWait"] == 22730501
    assert ports[1].counters["PortXmitWait"] == 36510964
    assert ports[1].counters["PortRcvData"] == 39078804993378
    assert "PortXmitWait" not in ERROR_COUNTERS  # congestion, not an error
    assert nonzero_error_counters(ports) == {}


def test_rcv_error_details(corpus_text: Read) -> None:
    (port,) = parse_perfquery(corpus_text("perfquery/switch-rcv-error-details-port1.txt"))
    assert (port.kind, port.lid, port.port, port.cap_mask) == ("rcv_error_details", 1719, 1, None)
    assert list(port.errors) == ["PortLocalPhysicalErrors", "PortMalformedPktErrors", "PortBufferOverrunErrors",
                                 "PortDLIDMappingErrors", "PortVLMappingErrors", "PortLoopingErrors"]


def test_nonzero_errors_and_plain_counters() -> None:
    text = (
        "# Port counters: Lid 5 port 1 (CapMask: 0x1400)\n"
        "PortSelect:......................1\n"
        "SymbolErrorCounter:..............17\n"
        "LinkDownedCounter:...............2\n"
        "PortRcvErrors:...................0\n"
        "PortXmitData:....................4294967295\n"
    )
    ports = parse_perfquery(text)
    assert ports[0].kind == "counters"
    assert nonzero_error_counters(ports) == {(5, 1): {"SymbolErrorCounter": 17, "LinkDownedCounter": 2}}


def test_errors() -> None:
    with pytest.raises(ToolReportedError, match="perfquery.*iberror"):
        parse_perfquery("ibwarn: [1] mad_rpc: _do_madrpc failed; dport (Lid 5)\nperfquery: iberror: failed: perfquery\n")
    with pytest.raises(UnrecognizedOutput, match="^perfquery"):
        parse_perfquery("SymbolErrorCounter:..............0\n")
    with pytest.raises(ParseError, match=r"perfquery \(line 2\)"):
        parse_perfquery("# Port counters: Lid 5 port 1\nthis is not a counter\n")
