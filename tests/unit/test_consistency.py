"""Peer-relative outliers: a pair far from the median is found, a uniform cluster is not."""

from __future__ import annotations

import pytest

from pytest_fabric.consistency import above_median, below_median


def test_one_slow_pair_stands_out_even_above_the_floor() -> None:
    values = {f"p{i}": 196e9 for i in range(27)} | {"slow": 181e9}  # still >= 180 Gb/s floor
    deviation = below_median(values, "slow")
    assert deviation.fraction == pytest.approx(15 / 196)
    assert below_median(values, "p0").fraction == 0


def test_uniformly_slow_cluster_has_no_outlier() -> None:
    values = {f"p{i}": 100e9 for i in range(10)}
    assert all(below_median(values, k).fraction == 0 for k in values)


def test_latency_above_the_median() -> None:
    values = {"a": 1.6e-6, "b": 1.7e-6, "c": 1.6e-6, "bad": 3.2e-6}
    assert above_median(values, "bad").fraction == pytest.approx(1.0, rel=0.1)
    assert above_median(values, "a").fraction == 0


def test_concurrency_ratio_shows_a_blocking_fabric() -> None:
    from pytest_fabric.consistency import concurrency_ratio

    alone = [196e9] * 4
    assert concurrency_ratio(alone, [195e9] * 4) == pytest.approx(0.995, abs=0.001)  # non-blocking
    assert concurrency_ratio(alone, [98e9] * 4) == pytest.approx(0.5)  # 2:1 oversubscribed spine
    with pytest.raises(ValueError):
        concurrency_ratio([0.0], [1.0])
