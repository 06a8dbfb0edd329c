"""judge/cross_checks.py: one check's figure against another's of the same hardware, the node charged named."""

from __future__ import annotations

import pytest

from pytest_fabric.checks.nccl import NCCL_ALLREDUCE
from pytest_fabric.checks.rdma import GPUDIRECT_BANDWIDTH
from pytest_fabric.checks.tcp import TCP_THROUGHPUT
from pytest_fabric.judge import cross_checks as x

# the bounds as the bounded checks declare them (Check.bounded_by, in their family modules)
NCCL, GPUDIRECT, TCP = (c.bounded_by for c in (NCCL_ALLREDUCE, GPUDIRECT_BANDWIDTH, TCP_THROUGHPUT))
assert NCCL is not None and GPUDIRECT is not None and TCP is not None
NCCL_KW = {"by": NCCL.by, "tolerance": NCCL.tolerance, "below": NCCL.below}
GD_KW = {"by": GPUDIRECT.by, "tolerance": GPUDIRECT.tolerance}
TCP_KW = {"by": TCP.by, "tolerance": TCP.tolerance}

HDR4 = {"mlx5_0/1": 196.2, "mlx5_1/1": 196.0, "mlx5_2/1": 195.8, "mlx5_3/1": 196.1}  # 784.1 Gb/s = 98 GB/s


def test_nccl_within_its_rails_is_consistent() -> None:
    found = x.nccl_against_rails("gpu01", 88.0, HDR4, **NCCL_KW)  # 704 Gb/s of 784: a ring at 90 %
    assert (found.status, found.node, found.figure, found.tolerance) == (x.CONSISTENT, "gpu01", 704.0, 0.10)
    assert found.bound == pytest.approx(784.1)


def test_nccl_above_its_rails_sum_is_inconsistent_and_charged_to_its_launcher() -> None:
    found = x.nccl_against_rails("gpu01", 196.0, HDR4, **NCCL_KW)  # a wrapper's 2x: 1568 Gb/s through 784 Gb/s of rails
    assert (found.status, found.node) == (x.INCONSISTENT, "gpu01")
    assert "2.00x their sum" in found.detail and "tolerance of 10 %" in found.detail
    assert x.failure([found]) == f"inconsistent on gpu01: gpu01: nccl vs rails: {found.detail}"
    # up to the tolerance is still within: perftest's one run of each rail is not exact
    assert x.nccl_against_rails("gpu01", 784.1 * 1.09 / 8, HDR4, **NCCL_KW).status == x.CONSISTENT


def test_nccl_far_below_its_rails_points_at_the_gpu_side_without_failing() -> None:
    found = x.nccl_against_rails("gpu01", 30.0, HDR4, **NCCL_KW)
    assert found.status == x.FINDING and "look at the GPU side" in found.detail
    assert x.failure([found]) is None


def test_nccl_without_rails_is_not_run() -> None:
    assert x.nccl_against_rails("gpu01", 90.0, {}, **NCCL_KW).status == x.NOT_RUN


def test_gpudirect_above_host_rdma_on_the_same_ports_is_inconsistent() -> None:
    assert x.gpudirect_against_host("gpu01", "mlx5_0/1->mlx5_0/1", 190.0, 196.0, **GD_KW).status == x.CONSISTENT
    assert x.gpudirect_against_host("gpu01", "mlx5_0/1->mlx5_0/1", 205.0, 196.0, **GD_KW).status == x.CONSISTENT  # 4.6 %
    found = x.gpudirect_against_host("gpu02", "mlx5_0/1->mlx5_0/1", 240.0, 196.0, **GD_KW)
    assert (found.status, found.node, found.figure, found.bound) == (x.INCONSISTENT, "gpu02", 240.0, 196.0)
    assert x.gpudirect_against_host("gpu02", "mlx5_0/1->mlx5_0/1", 240.0, None, **GD_KW).status == x.NOT_RUN


def test_tcp_above_the_rdma_figure_of_its_port_is_inconsistent() -> None:
    assert x.tcp_against_rdma("gpu01", "ib0", "mlx5_0/1", 92.0, 196.0, **TCP_KW).status == x.CONSISTENT
    found = x.tcp_against_rdma("gpu01", "ib0", "mlx5_0/1", 250.0, 196.0, **TCP_KW)
    assert (found.status, found.node) == (x.INCONSISTENT, "gpu01") and "TCP cannot carry more" in found.detail
    veth = x.tcp_against_rdma("gpu01", "eth0", None, 9.0, None, **TCP_KW)
    assert veth.status == x.NOT_RUN and "eth0, which is no RDMA port's netdev" in veth.detail


def test_the_bounds_are_declared_on_the_bounded_checks_and_named_in_the_messages() -> None:
    assert (NCCL.relation, NCCL.tolerance, NCCL.below) == ("rails_sum", 0.10, 0.5)
    assert (GPUDIRECT.relation, GPUDIRECT.tolerance, TCP.relation, TCP.tolerance) == ("same_ports", 0.05, "port_under", 0.05)
    assert NCCL.by == GPUDIRECT.by == TCP.by == "rdma_bandwidth"
    # the judge names the bounding check it is given, whichever it is
    assert "measured by host_rdma for" in x.nccl_against_rails("a", 90.0, {}, by="host_rdma", tolerance=0.1).detail
    assert "host_rdma measured no rail" in x.gpudirect_against_host("a", "p", 1.0, None, by="host_rdma", tolerance=0.1).detail


def test_summary_counts_each_cross_check() -> None:
    found = [x.nccl_against_rails("a", 88.0, HDR4, **NCCL_KW), x.gpudirect_against_host("a", "p", 240.0, 196.0, **GD_KW),
             x.gpudirect_against_host("a", "q", 190.0, 196.0, **GD_KW)]
    assert x.summary(found) == "cross-checked nccl vs rails: 1 consistent; gpudirect vs host rdma: 1 consistent, 1 inconsistent"
    assert x.summary([]) == "no cross-check ran"
    assert found[0].to_dict()["name"] == "nccl vs rails"
