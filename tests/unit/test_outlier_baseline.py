"""The outlier check judges each end of a pair against a baseline without that node (issue 29), the
model's own (:func:`pytest_fabric.judge.blame.baseline_without`): a slow node's own pairs do not
widen the spread it is judged against."""

from __future__ import annotations

import math

import pytest

from pytest_fabric.judge import consistency
from pytest_fabric.judge.blame import Figure, baseline_without

GBPS = 1e9
LIMIT = 0.07  # outlier: {max_below_median: 7%}

# Six nodes, real iperf3 on a busy machine: healthy pairs 3.8-9.4 Gb/s; node03 shaped to 800 Mbit/s.
HEALTHY = {
    ("node01", "node02"): 9.4, ("node01", "node04"): 3.8, ("node01", "node05"): 6.1, ("node01", "node06"): 7.9,
    ("node02", "node04"): 5.2, ("node02", "node05"): 8.6, ("node02", "node06"): 4.4, ("node04", "node05"): 7.2,
    ("node04", "node06"): 9.0, ("node05", "node06"): 5.8,
}
SLOW = {("node01", "node03"): 0.78, ("node02", "node03"): 0.80, ("node03", "node04"): 0.76,
        ("node03", "node05"): 0.81, ("node03", "node06"): 0.79}
ENDS = {f"{a}<->{b}": (a, b) for a, b in [*HEALTHY, *SLOW]}
VALUES = {f"{a}<->{b}": v * GBPS for (a, b), v in {**HEALTHY, **SLOW}.items()}


def test_a_node_at_an_eighth_of_its_noisy_peers_fails_the_outlier_check_and_no_healthy_pair_does() -> None:
    population = consistency.Population.of(VALUES, ENDS)
    failing = {pair for pair in VALUES if consistency.outlier(population, pair).beyond_spread > LIMIT}
    assert failing == {pair for pair in VALUES if "node03" in pair}


def test_the_slow_nodes_own_pairs_would_have_hidden_it() -> None:
    # over all 15 pairs, node03's own five included, its 85% fall within "the spread" (the fault)
    everything = consistency.outlier(consistency.Population.of(VALUES), "node01<->node03")
    assert everything.beyond_spread == 0.0 and everything.fraction > 0.8


def test_the_message_names_the_baseline_without_the_slow_node() -> None:
    finding = consistency.outlier(consistency.Population.of(VALUES, ENDS), "node01<->node03")
    # the 10 pairs among node01, node02, node04, node05 and node06
    assert finding.without == ("node03",) and finding.peers == 10
    text = consistency.describe(finding, LIMIT)
    assert "below the median of the 10 pairs without node03" in text, text
    assert text.endswith("limit 7 %")


def test_the_baseline_is_the_blame_models() -> None:
    figures = [Figure("tcp_throughput", ENDS[p], (v,), directed=False) for p, v in VALUES.items()]
    base = baseline_without(("node03",), figures)
    assert base is not None
    median, spread, count = base
    finding = consistency.outlier(consistency.Population.of(VALUES, ENDS), "node01<->node03")
    assert (finding.median, count) == (median, 10)
    assert finding.spread == pytest.approx(1 - math.exp(-consistency.FENCE_SIGMAS * spread))


def test_too_few_pairs_without_either_end_judge_against_every_other_pair() -> None:
    # a ring of four: without a (or b) two pairs are left, too few; the three other pairs are the baseline
    ends = {"a<->b": ("a", "b"), "b<->c": ("b", "c"), "c<->d": ("c", "d"), "a<->d": ("a", "d")}
    values = {"a<->b": 1.0, "b<->c": 9.0, "c<->d": 9.2, "a<->d": 8.8}
    finding = consistency.outlier(consistency.Population.of(values, ends), "a<->b")
    assert finding.peers == 3 and finding.without == () and finding.beyond_spread > LIMIT
    assert "the median of the 3 other pairs" in consistency.describe(finding, LIMIT)
