"""report/witnesses.py: what vouches for a check's figures, as escaped HTML for its evidence block."""

from __future__ import annotations

from pytest_fabric.judge import cross_checks
from pytest_fabric.report.witnesses import corroborations_html


def test_cross_checks_are_listed_with_the_node_charged_and_escaped() -> None:
    found = [cross_checks.nccl_against_rails("gpu<01>", 196.0, {"mlx5_0/1": 196.0, "mlx5_1/1": 196.0}, by="rdma_bandwidth", tolerance=0.1).to_dict()]
    page = corroborations_html({"extra": {"corroborations": [], "cross_checks": found}})
    assert "<p>Corroborations: none ran.</p>" in page and "<summary>Cross-checks (1)</summary>" in page
    assert "nccl vs rails, charged to gpu&lt;01" in page and "INCONSISTENT &mdash; NCCL busbw 196.0 GB/s" in page
    assert "<01" not in page


def test_a_check_without_either_shows_nothing() -> None:
    assert corroborations_html({"extra": {}}) == ""
    only = corroborations_html({"extra": {"cross_checks": [
        cross_checks.gpudirect_against_host("n", "GPU0 via mlx5_0->mlx5_0", 190.0, 196.0, by="rdma_bandwidth", tolerance=0.1).to_dict()]}})
    assert only.startswith("<details><summary>Cross-checks (1)</summary>") and "consistent" in only
