"""Error counters (probes/counters.py) against canned tool output: both ends, RoCE sources, classes, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, Op, judge
from pytest_fabric.probes import counters
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus"

# The real failure of perfquery on an Ethernet (RoCE) port (treydock/infiniband_exporter#26).
PERFQUERY_ON_ROCE = CannedCommand(
    exit_code=255,
    stderr="ibwarn: [299010] mad_rpc_open_port: client_register for mgmt 1 failed\n"
    "perfquery: iberror: failed: Failed to open 'mlx5_0' port '1'\n",
)
# rdma statistic, one line per port, in the layout of iproute2's `rdma stat show` patch.
RDMA_STAT = (
    "link mlx5_0/1 rx_write_requests 8 rx_read_requests 4 rx_atomic_requests 0 out_of_buffer {oob} "
    "out_of_sequence {oos} duplicate_request 0 rnr_nak_retry_err 0 packet_seq_err 0 implied_nak_seq_err 0 "
    "local_ack_timeout_err 0 resp_local_length_error 0 resp_cqe_error {cqe} req_cqe_error 0 "
    "req_remote_invalid_request 0 req_remote_access_errors 0 resp_remote_access_errors 0 "
    "resp_cqe_flush_error 0 req_cqe_flush_error 0 rp_cnp_ignored 0 rp_cnp_handled 0 "
    "np_ecn_marked_roce_packets 0 np_cnp_sent {cnp} rx_icrc_encapsulated 0\n"
)
RDMA_LINK = "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1f0 \n"
ETHTOOL_S = (
    "NIC statistics:\n     rx_packets: {pkts}\n     rx_crc_errors_phy: {crc}\n     rx_symbol_err_phy: 0\n"
    "     rx_discards_phy: {disc}\n     link_down_events_phy: 0\n     rx_prio3_discards: {p3}\n"
    "     rx_prio3_pause: {pause}\n     rx_corrected_bits_phy: {fec}\n"
)


def handle(answers: dict[str, str | CannedCommand], name: str = "gpu01") -> tuple[NodeHandle, MockTransport]:
    transport = MockTransport(name, answers)
    return NodeHandle(Node(name=name, host="10.0.0.1"), ConnectionPool(lambda _: transport)), transport


def corpus(relative: str) -> str:
    path = CORPUS / relative
    if not path.is_file():
        pytest.skip(f"shared corpus file {relative} not present")
    return path.read_text()


def roce(**values: int) -> tuple[NodeHandle, MockTransport]:
    v = {"oob": 0, "oos": 0, "cqe": 0, "cnp": 0, "pkts": 100, "crc": 0, "disc": 0, "p3": 0, "pause": 0, "fec": 0} | values
    return handle({
        r"^perfquery": PERFQUERY_ON_ROCE,
        r"^rdma statistic show link mlx5_0/1$": RDMA_STAT.format(**v),
        r"^rdma link show mlx5_0/1$": RDMA_LINK,
        r"^ethtool -S ens1f0$": ETHTOOL_S.format(**v),
    })


def expect(bound: str, value: int) -> Expectation:
    return Expectation("inter_node", "error_counters", Op.MAX, parse_quantity(value), f"inter_node.error_counters.{bound}")


def test_roce_counters_come_from_rdma_statistic_and_ethtool_never_perfquery() -> None:
    node, before_calls = roce()
    before = counters.read_port(node, "mlx5_0", 1, infiniband=False)
    # Application teardown (cqe errors), CNPs, pauses, FEC corrections and traffic grow too: none is a fault.
    later, _ = roce(oos=5, crc=2, disc=12, oob=3, cqe=40, cnp=9, pause=700, fec=1000, pkts=10**9)
    after = counters.read_port(later, "mlx5_0", 1, infiniband=False)
    assert not any(c.startswith("perfquery") for c in before_calls.calls)
    measured = counters.measurement(before, after, lossless_priorities=(3,))
    assert measured.bounds["max"] == parse_quantity(5)  # out_of_sequence; rx_crc_errors_phy is a receive error
    assert measured.extra["rates"]["receive"]["count"] == 2
    assert measured.bounds["congestion_max"] == parse_quantity(12)  # rx_discards_phy, the largest
    assert "mlx5_0/1 out_of_sequence +5" in measured.detail and "ens1f0 rx_crc_errors_phy +2" in measured.detail
    for quiet in ("resp_cqe_error", "np_cnp_sent", "rx_prio3_pause", "rx_corrected_bits_phy", "rx_packets"):
        assert quiet not in measured.detail
    verdict = judge("gpu01:port0", measured, expect("max", 0))
    assert not verdict.passed and "out_of_sequence" in verdict.message


def test_a_drop_on_a_lossless_priority_is_a_fault_elsewhere_congestion() -> None:
    node, _ = roce()
    later, _ = roce(p3=4)
    before, after = (counters.read_port(n, "mlx5_0", 1, infiniband=False) for n in (node, later))
    assert counters.measurement(before, after, lossless_priorities=(3,)).bounds["max"] == parse_quantity(4)
    lossy = counters.measurement(before, after, lossless_priorities=())
    assert lossy.bounds["max"] == parse_quantity(0) and lossy.bounds["congestion_max"] == parse_quantity(4)


def test_empty_rdma_statistic_or_unknown_ethtool_names_are_errors_not_zero_growth() -> None:
    empty, _ = handle({r"^rdma statistic": "", r"^rdma link": RDMA_LINK, r"^ethtool -S": ETHTOOL_S})
    with pytest.raises(MeasurementError, match="rdma statistic"):
        counters.read_port(empty, "mlx5_0", 1, infiniband=False)
    foreign, _ = handle({
        r"^rdma statistic": RDMA_STAT.format(oob=0, oos=0, cqe=0, cnp=0),
        r"^rdma link": RDMA_LINK,
        # another driver's names: nothing this check knows how to judge
        r"^ethtool -S": "NIC statistics:\n     rx_packets: 5\n     rx_crc_errors.nic: 0\n",
    })
    with pytest.raises(MeasurementError, match="none of the counters this check judges"):
        counters.read_port(foreign, "mlx5_0", 1, infiniband=False)


IBLINKINFO = (
    "CA: gpu01 mlx5_0:\n"
    '      0x0c42a10300aaaa00    133    1[  ] ==( 4X        25.78125 Gbps Active/  LinkUp)==>    1719    1[  ] '
    '"MF0;leaf01:MQM8700/U1" ( )\n'
)


def ib(hca: str, switch: str) -> tuple[NodeHandle, MockTransport]:
    return handle({
        r"^perfquery -x -C mlx5_0 -P 1$": hca,
        r"^iblinkinfo -C mlx5_0 -P 1 -D 0$": IBLINKINFO,
        r"^perfquery -x -C mlx5_0 -P 1 1719 1$": switch,
    })


def test_infiniband_reads_the_switch_port_facing_the_hca_and_blames_that_end() -> None:
    hca = corpus("perfquery/hca-edr-extended-counters-lid133.txt")
    switch = corpus("perfquery/switch-edr-extended-counters-2ports.txt").split("# Port extended counters: Lid 1719 port 2")[0]
    node, calls = ib(hca, switch)
    before = counters.read_port(node, "mlx5_0", 1, infiniband=True)
    assert [r.end for r in before.readings] == ["mlx5_0/1", "peer LID 1719 port 1 (MF0;leaf01:MQM8700/U1)"]
    # the host->switch direction: only the switch's receiver sees the bad symbols
    grown = switch.replace("SymbolErrorCounter:..............0", "SymbolErrorCounter:..............9")
    later, _ = ib(hca, grown)
    measured = counters.measurement(before, counters.read_port(later, "mlx5_0", 1, infiniband=True))
    assert measured.bounds["max"] == parse_quantity(0)  # symbol errors are judged by rate, not as faults
    assert measured.extra["rates"]["symbol"]["count"] == 9
    assert "peer LID 1719 port 1 (MF0;leaf01:MQM8700/U1) SymbolErrorCounter +9" in measured.detail
    assert calls.calls[1] == "iblinkinfo -C mlx5_0 -P 1 -D 0"
    host_only = counters.measurement(
        counters.read_port(node, "mlx5_0", 1, infiniband=True, both_ends=False),
        counters.read_port(later, "mlx5_0", 1, infiniband=True, both_ends=False),
    )
    assert host_only.extra["rates"]["symbol"]["count"] == 0


def test_classes_congestion_has_its_own_bound_and_switch_relay_errors_are_not_faults() -> None:
    hca = corpus("perfquery/hca-edr-extended-counters-lid133.txt")
    switch = corpus("perfquery/switch-edr-extended-counters-2ports.txt").split("# Port extended counters: Lid 1719 port 2")[0]
    node, _ = ib(hca, switch)
    busy = (hca.replace("PortXmitWait:....................0", "PortXmitWait:....................50000")
               .replace("PortXmitDiscards:................0", "PortXmitDiscards:................3")
               .replace("PortRcvSwitchRelayErrors:........0", "PortRcvSwitchRelayErrors:........6"))
    later, _ = ib(busy, switch)
    measured = counters.measurement(counters.read_port(node, "mlx5_0", 1, infiniband=True),
                                    counters.read_port(later, "mlx5_0", 1, infiniband=True))
    assert judge("gpu01:port0", measured, expect("max", 0)).passed
    assert measured.bounds["congestion_max"] == parse_quantity(50000)  # the largest, per counter
    congestion = judge("gpu01:port0", measured, expect("congestion_max", 1000))
    assert not congestion.passed and "PortXmitWait +50000" in congestion.message
    assert "not faults (ibqueryerrors --suppress-common): mlx5_0/1 PortRcvSwitchRelayErrors +6" in measured.detail
    for name in ("LinkDownedCounter", "LinkErrorRecoveryCounter", "LocalLinkIntegrityErrors", "PortMalformedPktErrors"):
        assert counters.classify(name, infiniband=True) == "fault"
    assert counters.classify("SymbolErrorCounter", infiniband=True) == "symbol"
    assert counters.classify("PortRcvErrors", infiniband=True) == "receive"
    for name in ("PortXmitDiscards", "PortXmitWait"):
        assert counters.classify(name, infiniband=True) == "congestion"


def test_a_perfquery_header_without_counters_is_an_error() -> None:
    header_only = "# Port extended counters: Lid 133 port 1 (CapMask: 0x5A00 CapMask2: 0x0000000)\n"
    node, _ = handle({r"^perfquery": header_only})
    with pytest.raises(MeasurementError, match="perfquery printed none of the counters"):
        counters.read_port(node, "mlx5_0", 1, infiniband=True, both_ends=False)


def test_no_baseline_or_a_reset_is_an_error_never_a_verdict_on_lifetime_counts() -> None:
    hca = corpus("perfquery/hca-edr-extended-counters-lid133.txt")
    dirty = hca.replace("SymbolErrorCounter:..............0", "SymbolErrorCounter:..............70")
    node, _ = handle({r"^perfquery": dirty})
    after = counters.read_port(node, "mlx5_0", 1, infiniband=True, both_ends=False)
    failed = MeasurementError("gpu01", "timed out", command="perfquery -x -C mlx5_0 -P 1")
    with pytest.raises(MeasurementError, match="no counter reading from before the run: node gpu01: timed out"):
        counters.measurement(failed, after)
    with pytest.raises(MeasurementError, match="no counter reading from before the run"):
        counters.measurement(None, after)
    clean, _ = handle({r"^perfquery": hca})
    with pytest.raises(MeasurementError, match="went from 70 to 0: the counters were reset"):
        counters.measurement(after, counters.read_port(clean, "mlx5_0", 1, infiniband=True, both_ends=False))


# --- bit errors by rate (issue 20) ---------------------------------------------------------------


def _ib_reading(read_at: float, end: str = "mlx5_0/1", **counts: int) -> counters.PortCounters:
    values = {"SymbolErrorCounter": 0, "LinkDownedCounter": 0, "LinkErrorRecoveryCounter": 0, "PortRcvErrors": 0,
              "PortRcvRemotePhysicalErrors": 0} | counts
    return counters.PortCounters("gpu01", "mlx5_0/1", True, (counters.Reading(end, values),), read_at=read_at)


def test_the_poisson_lower_limit_is_the_textbook_one() -> None:
    # Garwood's one-sided 95% limits (chi2(0.05, 2n) / 2): 0.0513, 0.355, 0.818, 5.43, 84.1
    for count, limit in ((0, 0.0), (1, 0.0513), (2, 0.3554), (3, 0.8177), (10, 5.4254), (100, 84.139)):
        assert counters.poisson_lower_limit(count) == pytest.approx(limit, abs=5e-4)
    # the large-count form agrees with the exact sum where they meet
    assert counters.poisson_lower_limit(1001) == pytest.approx(counters.poisson_lower_limit(1000) + 0.974, abs=0.05)


def test_a_handful_of_symbol_errors_over_hours_passes_a_rate_the_zero_rule_would_have_failed() -> None:
    before = _ib_reading(0.0)
    after = _ib_reading(4 * 3600.0, SymbolErrorCounter=12, PortRcvErrors=3)  # four hours of a large run
    measured = counters.measurement(before, after)
    assert measured.bounds["max"] == parse_quantity(0)
    # 12 in 4 h: 3/h as seen; 6.93 / 4 h = 1.73/h at least (Garwood's limit for 12 is 6.928)
    assert measured.extra["rates"]["symbol"] == {"count": 12, "per_hour": 3.0, "at_least_per_hour": 1.731}
    assert judge("gpu01:port0", measured, expect("max", 0)).passed
    assert judge("gpu01:port0", measured, expect("symbol_errors_per_hour", 10)).passed
    assert judge("gpu01:port0", measured, expect("receive_errors_per_hour", 10)).passed
    assert "symbol errors (bound symbol_errors_per_hour): mlx5_0/1 SymbolErrorCounter +12, 12 in 4.0 h" in measured.detail
    # unset, a rate bound is 0 (the profile's default): none may grow, as before
    assert not judge("gpu01:port0", measured, expect("symbol_errors_per_hour", 0)).passed


def test_a_link_with_many_errors_an_hour_fails_and_a_short_run_needs_more_than_one_to_fail() -> None:
    bad = counters.measurement(_ib_reading(0.0), _ib_reading(1800.0, SymbolErrorCounter=400))  # 800/h
    verdict = judge("gpu01:port0", bad, expect("symbol_errors_per_hour", 10))
    assert not verdict.passed and "symbol_errors_per_hour measured 7" in verdict.message  # at least ~740/h
    assert "SymbolErrorCounter +400, 400 in 30.0 min: 800/h" in verdict.message
    # One error in two minutes is 30/h as seen, but its lower limit is 1.5/h: not failed.
    one = counters.measurement(_ib_reading(0.0), _ib_reading(120.0, SymbolErrorCounter=1))
    assert one.extra["rates"]["symbol"]["per_hour"] == 30.0
    assert judge("gpu01:port0", one, expect("symbol_errors_per_hour", 10)).passed
    # Ten in two minutes cannot come from a link with 10/h (at least 163/h at 95%).
    ten = counters.measurement(_ib_reading(0.0), _ib_reading(120.0, SymbolErrorCounter=10))
    assert not judge("gpu01:port0", ten, expect("symbol_errors_per_hour", 10)).passed


def test_link_events_stay_zero_whatever_the_rate_bounds_allow() -> None:
    measured = counters.measurement(_ib_reading(0.0), _ib_reading(3600.0, LinkDownedCounter=1, SymbolErrorCounter=2))
    assert measured.bounds["max"] == parse_quantity(1)
    verdict = judge("gpu01:port0", measured, expect("max", 0))
    assert not verdict.passed and "faults: mlx5_0/1 LinkDownedCounter +1" in verdict.message


def test_rates_sum_both_ends_and_count_a_detail_of_a_total_once() -> None:
    before = counters.PortCounters("gpu01", "mlx5_0/1", True, (
        counters.Reading("mlx5_0/1", {"SymbolErrorCounter": 0, "PortRcvErrors": 0, "PortLocalPhysicalErrors": 0}),
        counters.Reading("peer LID 7 port 3", {"SymbolErrorCounter": 5, "PortRcvErrors": 1}),
    ), read_at=0.0)
    after = counters.PortCounters("gpu01", "mlx5_0/1", True, (
        counters.Reading("mlx5_0/1", {"SymbolErrorCounter": 2, "PortRcvErrors": 3, "PortLocalPhysicalErrors": 3}),
        counters.Reading("peer LID 7 port 3", {"SymbolErrorCounter": 9, "PortRcvErrors": 2}),
    ), read_at=7200.0)
    measured = counters.measurement(before, after)
    assert measured.extra["rates"]["symbol"]["count"] == 2 + 4  # host and switch receivers: one link
    assert measured.extra["rates"]["receive"]["count"] == 3 + 1  # PortLocalPhysicalErrors is within PortRcvErrors
    assert measured.extra["elapsed_s"] == 7200.0


def test_roce_symbol_and_crc_errors_are_rated_and_sequence_errors_stay_faults() -> None:
    assert counters.classify("rx_symbol_err_phy", infiniband=False) == "symbol"
    assert counters.classify("rx_pcs_symbol_err_phy", infiniband=False) == "symbol"
    assert counters.classify("rx_crc_errors_phy", infiniband=False) == "receive"
    assert counters.classify("out_of_sequence", infiniband=False) == "fault"
    assert counters.classify("link_down_events_phy", infiniband=False) == "fault"
