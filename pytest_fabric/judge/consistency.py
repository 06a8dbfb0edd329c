"""Peer-relative consistency: a pair far from the cluster's median is a finding.

A contract floor catches a uniformly slow cluster; it does not catch one bad
cable in a fast one (that pair still clears 90 % of line while its peers do
99 %).  These pure functions compare each pair with the median of its peers,
and judge a pair only on what survives re-measuring it and stands out of the
measurement's own spread.

Where the pairs' ends are known, each end of a pair is judged against the
pairs it is not in: the baseline the blame model judges a node against
(:func:`~pytest_fabric.judge.blame.baseline_without`). A slow node's own pairs
would otherwise widen the spread it is judged against (issue 29: a node at 1/8
of its peers was "within the spread" of 15 pairs, its own five among them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from pytest_fabric.judge.blame import Figure, baseline_without, baselines_without

__all__ = ["Deviation", "OutlierFinding", "Population", "below_median", "above_median", "describe", "outlier", "peers_text"]


@dataclass(frozen=True)
class Deviation:
    subject: str
    value: float
    median: float
    peers: int
    fraction: float  # how far from the median, as a fraction of it (positive = worse)


def _median(values: Mapping[str, float]) -> float:
    if not values:
        raise ValueError("no measurements to compare")
    return float(statistics.median(values.values()))


def below_median(values: Mapping[str, float], subject: str) -> Deviation:
    """How far ``subject``'s value (a bandwidth: higher is better) sits below the median of all."""
    median = _median(values)
    value = values[subject]
    fraction = (median - value) / median if median > 0 else 0.0
    return Deviation(subject, value, median, len(values), max(fraction, 0.0))


def above_median(values: Mapping[str, float], subject: str) -> Deviation:
    """How far ``subject``'s value (a latency: lower is better) sits above the median of all."""
    median = _median(values)
    value = values[subject]
    fraction = (value - median) / median if median > 0 else 0.0
    return Deviation(subject, value, median, len(values), max(fraction, 0.0))


# A normal distribution's standard deviation is 1.4826 times its median absolute
# deviation; three of those is the usual robust outlier fence (Leys et al.,
# "Detecting outliers: do not use standard deviation around the mean, use
# absolute deviation around the median", 2013).
MAD_TO_SIGMA = 1.4826
FENCE_SIGMAS = 3.0


@dataclass(frozen=True)
class Population:
    """One check's figures over all measured pairs, with their median and MAD, computed once.

    Every pair's outlier test and every attribution decision compares against the same
    population: computing it once after the rounds keeps a run's work O(pairs), not O(pairs^2).
    ``ends``: each pair's nodes, where known: each end of a pair is then judged against the pairs
    it is not in (:func:`outlier`), each node's baseline built once.
    """

    values: Mapping[str, float]
    median: float
    mad: float
    ends: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    _baselines: dict[str, tuple[float, float, int] | None] = field(
        default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, values: Mapping[str, float], ends: Mapping[str, tuple[str, ...]] | None = None) -> Population:
        median = _median(values)
        return cls(values, median, float(statistics.median(abs(v - median) for v in values.values())), dict(ends or {}))

    def with_value(self, subject: str, value: float) -> Population:
        """The same population with ``subject``'s figure replaced (or added)."""
        return Population.of({**self.values, subject: value}, self.ends)

    def baselines(self, subject: str) -> list[tuple[float, float, int, tuple[str, ...]]]:
        """What ``subject``'s ends are judged against, as the blame model builds a node's baseline:
        per end, (median, spread in log, how many pairs, (the end,)) of the pairs it is not in;
        where neither end has enough, one of every other pair (``()`` left out); none without ends."""
        own = self.ends.get(subject)
        if own is None:
            return []
        out: list[tuple[float, float, int, tuple[str, ...]]] = []
        for end in sorted(set(own)):
            if (base := self._node_baselines().get(end)) is not None:
                out.append((*base, (end,)))
        if not out and (base := baseline_without((), self._figures(subject))) is not None:
            out.append((*base, ()))
        return out

    def _figures(self, subject: str = "") -> list[Figure]:
        return [Figure("peers", self.ends[k], (v,), directed=False)
                for k, v in sorted(self.values.items()) if k != subject and k in self.ends and v > 0]

    def _node_baselines(self) -> dict[str, tuple[float, float, int] | None]:
        """Every node's baseline (the pairs it is not in), all at once: the figures are read once."""
        if not self._baselines:
            nodes = sorted({n for ends in self.ends.values() for n in ends})
            self._baselines.update(zip(nodes, baselines_without([(n,) for n in nodes], self._figures())))
        return self._baselines


@dataclass(frozen=True)
class OutlierFinding:
    """A pair judged against its peers after re-measuring: how far beyond the noise it sits."""

    subject: str
    value: float  # the figure judged: the median of the re-measurements, else the round figure
    round_value: float
    median: float
    peers: int
    fraction: float  # how far from the median, as a share of it (positive = worse)
    spread: float  # the noise band, as a share of the median: the pairs' own spread or the repeats'
    samples: int  # how many measurements of this pair the verdict rests on
    remeasured: tuple[float, ...] = ()
    #: the end whose pairs the baseline leaves out; () when every other pair (or every pair)
    without: tuple[str, ...] = ()
    #: was the baseline built without the pair (the blame model's), or over every pair, its own included
    leave_out: bool = False

    @property
    def beyond_spread(self) -> float:
        """The deviation that the measurement's own spread does not explain (0 when within it)."""
        return max(self.fraction - self.spread, 0.0)


def outlier(
    values: Mapping[str, float] | Population,
    subject: str,
    remeasured: Sequence[float] = (),
    *,
    lower_is_better: bool = False,
) -> OutlierFinding:
    """Judge ``subject`` against the median of its peers in ``values`` (one figure per pair, from the sweep).

    A single sample a few percent off the median is noise, not a cable: the
    figure judged is the median of ``remeasured`` (the pair measured again,
    alone) when given, and the deviation counts only beyond the noise band,
    the larger of three robust standard deviations of the peers and the
    range of the re-measurements.

    With the pairs' ends (:attr:`Population.ends`) each end is judged against the
    pairs it is not in, their median and spread the blame model's
    (:meth:`Population.baselines`: on the figures' logarithms, three spreads below
    the median is a share of ``1 - exp(-3 spread)``), and the pair's finding is
    the worse end's; without them, every pair, the subject's own included.
    """
    population = values if isinstance(values, Population) else Population.of(values)
    round_value = population.values[subject]
    value = float(statistics.median(remeasured)) if remeasured else round_value
    findings = [
        _judged(subject, value, round_value, remeasured, lower_is_better, median,
                (math.exp(FENCE_SIGMAS * spread) - 1 if lower_is_better else 1 - math.exp(-FENCE_SIGMAS * spread)) * median,
                peers, without, True)
        for median, spread, peers, without in population.baselines(subject)
    ]
    if findings:
        return max(findings, key=lambda f: (f.beyond_spread, f.fraction))
    return _judged(subject, value, round_value, remeasured, lower_is_better, population.median,
                   FENCE_SIGMAS * MAD_TO_SIGMA * population.mad, len(population.values), (), False)


def _judged(subject: str, value: float, round_value: float, remeasured: Sequence[float], lower_is_better: bool,
            median: float, noise: float, peers: int, without: tuple[str, ...], leave_out: bool) -> OutlierFinding:
    """``value`` against ``median``, the noise band ``noise`` (or the re-measurements' range) allowed."""
    repeat_range = (max(remeasured) - min(remeasured)) if len(remeasured) > 1 else 0.0
    if median > 0:
        fraction = (value - median) / median if lower_is_better else (median - value) / median
        spread = max(noise, repeat_range) / median
    else:
        fraction, spread = 0.0, 0.0
    return OutlierFinding(
        subject,
        value,
        round_value,
        median,
        peers,
        max(fraction, 0.0),
        spread,
        1 + len(remeasured),
        tuple(remeasured),
        without,
        leave_out,
    )


def peers_text(finding: OutlierFinding) -> str:
    """The pairs a finding's median is of: ``the 6 pairs without node01 and node03``."""
    if finding.without:
        return f"the {finding.peers} pairs without {' and '.join(finding.without)}"
    return f"the {finding.peers} other pairs" if finding.leave_out else f"{finding.peers} pairs"


def describe(finding: OutlierFinding, limit: float | None, *, lower_is_better: bool = False) -> str:
    """A finding as a person says it: ``12 % below the median of 15 pairs; limit 7 %``.

    The figure is the deviation beyond the measurement's own spread (what the limit is compared
    with); when part of the deviation is within that spread, the whole deviation is said too.
    """
    def pct(fraction: float) -> str:
        text = f"{fraction * 100:.1f}".removesuffix(".0")
        return f"{text} %"

    direction = "above" if lower_is_better else "below"
    text = f"{pct(finding.beyond_spread)} {direction} the median of {peers_text(finding)}"
    within = min(finding.spread, finding.fraction)
    if within > 0 and finding.fraction > 0:
        text += f" beyond their spread ({pct(finding.fraction)} in all, {pct(within)} of it noise)"
    if limit is not None:
        text += f"; limit {pct(limit)}"
    return text


def as_percent(fraction: float) -> Decimal:
    return Decimal(str(round(fraction, 6)))


def concurrency_ratio(alone: list[float], together: list[float]) -> float:
    """What flows moved all at once, as a share of what they moved one at a time.

    On a non-blocking fabric cross-leaf pairs measured together each get their
    full rate (ratio ~1.0); an oversubscribed spine shares its uplinks, so the
    ratio falls towards 1/oversubscription (0.5 for 2:1).
    """
    total_alone = sum(alone)
    if total_alone <= 0:
        raise ValueError("no throughput measured one at a time")
    return sum(together) / total_alone
