"""rdma statistic show (iproute2): one line of hardware counters per RDMA port."""

from __future__ import annotations

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.rdma_statistic import parse_rdma_statistic

# The layout of `rdma stat show link mlx5_2/1` in Mark Zhang's iproute2 patch ("rdma: Add
# default counter show support", 2019), on one line as the tool prints it, two ports.
TWO_PORTS = (
    "link mlx5_2/1 rx_write_requests 8 rx_read_requests 4 rx_atomic_requests 0 out_of_buffer 0 "
    "out_of_sequence 0 duplicate_request 0 rnr_nak_retry_err 0 packet_seq_err 0 implied_nak_seq_err 0 "
    "local_ack_timeout_err 0 resp_local_length_error 0 resp_cqe_error 0 req_cqe_error 0 "
    "req_remote_invalid_request 0 req_remote_access_errors 0 resp_remote_access_errors 0 "
    "resp_cqe_flush_error 0 req_cqe_flush_error 0 rp_cnp_ignored 0 rp_cnp_handled 0 "
    "np_ecn_marked_roce_packets 0 np_cnp_sent 0 rx_icrc_encapsulated 0\n"
    "link mlx5_3/1 rx_write_requests 0 out_of_sequence 17 packet_seq_err 2 local_ack_timeout_err 1\n"
)


def test_one_entry_per_port_with_every_counter() -> None:
    first, second = parse_rdma_statistic(TWO_PORTS)
    assert (first.name, second.name) == ("mlx5_2/1", "mlx5_3/1")
    assert first.counters["rx_write_requests"] == 8 and len(first.counters) == 23
    assert second.counters == {"rx_write_requests": 0, "out_of_sequence": 17, "packet_seq_err": 2, "local_ack_timeout_err": 1}


def test_json_output() -> None:
    (port,) = parse_rdma_statistic('[{"ifindex":3,"ifname":"mlx5_0","port":1,"out_of_sequence":4,"np_cnp_sent":0}]')
    assert port.name == "mlx5_0/1" and port.counters == {"out_of_sequence": 4, "np_cnp_sent": 0}


@pytest.mark.parametrize("text", ["", "   \n", "[]", "Error: no such device\n"])
def test_empty_or_foreign_output_is_unrecognized(text: str) -> None:
    with pytest.raises(UnrecognizedOutput):
        parse_rdma_statistic(text)


def test_a_value_that_is_not_a_count_names_the_counter() -> None:
    with pytest.raises(ParseError, match="out_of_sequence"):
        parse_rdma_statistic("link mlx5_0/1 out_of_sequence lots\n")
    with pytest.raises(ParseError, match="odd number"):
        parse_rdma_statistic("link mlx5_0/1 out_of_sequence\n")
