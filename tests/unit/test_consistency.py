"""Peer-relative outliers: a pair far from the median is found, a uniform cluster is not."""

from __future__ import annotations

import pytest

from pytest_fabric.judge.consistency import above_median, below_median


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
    from pytest_fabric.judge.consistency import concurrency_ratio

    alone = [196e9] * 4
    assert concurrency_ratio(alone, [195e9] * 4) == pytest.approx(0.995, abs=0.001)  # non-blocking
    assert concurrency_ratio(alone, [98e9] * 4) == pytest.approx(0.5)  # 2:1 oversubscribed spine
    with pytest.raises(ValueError):
        concurrency_ratio([0.0], [1.0])


def test_a_single_sample_a_little_below_the_median_is_noise_not_a_cable() -> None:
    # The reproduced case: a healthy cluster whose pairs scatter by a few percent, one pair 7.3 %
    # below the median from one sample, against a 7 % limit.  Within the pairs' own spread.
    from pytest_fabric.judge.consistency import outlier

    spread = [100.0, 97.0, 103.0, 98.5, 101.5, 99.0, 102.0, 96.5, 100.5, 103.5, 97.5, 101.0, 99.5, 98.0]
    values = {f"p{i}": v * 1e9 for i, v in enumerate(spread)} | {"unlucky": 99.5e9 * (1 - 0.073)}  # median 99.5
    finding = outlier(values, "unlucky")
    assert finding.fraction == pytest.approx(0.073, abs=0.002)
    assert finding.spread > 0.07
    assert finding.beyond_spread < 0.01
    assert finding.samples == 1


def test_an_outlier_is_judged_on_the_median_of_its_re_measurements() -> None:
    from pytest_fabric.judge.consistency import outlier

    values = {f"p{i}": 196e9 for i in range(27)} | {"pair": 150e9}
    gone = outlier(values, "pair", [195e9, 196e9, 194e9])  # one bad sample, then fine
    assert gone.value == 195e9 and gone.beyond_spread < 0.01 and gone.samples == 4
    stays = outlier(values, "pair", [150e9, 151e9, 149e9])  # a real bad cable
    assert stays.beyond_spread == pytest.approx(46 / 196 - 2 / 196, rel=0.01)


def test_noisy_re_measurements_widen_the_band() -> None:
    from pytest_fabric.judge.consistency import outlier

    values = {f"p{i}": 196e9 for i in range(27)} | {"pair": 170e9}
    finding = outlier(values, "pair", [150e9, 180e9, 182e9])  # the repeats disagree by 32 Gb/s
    assert finding.spread == pytest.approx(32 / 196)
    assert finding.beyond_spread == 0.0


def test_latency_outliers_are_above_the_median() -> None:
    from pytest_fabric.judge.consistency import outlier

    values = {"a": 1.6e-6, "b": 1.6e-6, "c": 1.6e-6, "bad": 3.2e-6}
    finding = outlier(values, "bad", [3.2e-6, 3.2e-6], lower_is_better=True)
    assert finding.beyond_spread == pytest.approx(1.0)
