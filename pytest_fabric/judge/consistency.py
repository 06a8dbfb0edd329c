"""Peer-relative consistency: a pair far from the cluster's median is a finding.

A contract floor catches a uniformly slow cluster; it does not catch one bad
cable in a fast one (that pair still clears 90 % of line while its peers do
99 %).  These pure functions compare each pair with the median of all pairs,
and judge a pair only on what survives re-measuring it and stands out of the
measurement's own spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

__all__ = ["Deviation", "OutlierFinding", "Population", "below_median", "above_median", "describe", "outlier"]


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
    """

    values: Mapping[str, float]
    median: float
    mad: float

    @classmethod
    def of(cls, values: Mapping[str, float]) -> Population:
        median = _median(values)
        return cls(values, median, float(statistics.median(abs(v - median) for v in values.values())))

    def with_value(self, subject: str, value: float) -> Population:
        """The same population with ``subject``'s figure replaced (or added)."""
        return Population.of({**self.values, subject: value})


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
    """Judge ``subject`` against the median of ``values`` (one figure per pair, from the sweep).

    A single sample a few percent off the median is noise, not a cable: the
    figure judged is the median of ``remeasured`` (the pair measured again,
    alone) when given, and the deviation counts only beyond the noise band,
    the larger of three robust standard deviations of the pairs (MAD) and the
    range of the re-measurements.
    """
    population = values if isinstance(values, Population) else Population.of(values)
    median, mad = population.median, population.mad
    round_value = population.values[subject]
    value = float(statistics.median(remeasured)) if remeasured else round_value
    if median > 0:
        fraction = (value - median) / median if lower_is_better else (median - value) / median
        repeat_range = (max(remeasured) - min(remeasured)) if len(remeasured) > 1 else 0.0
        spread = max(FENCE_SIGMAS * MAD_TO_SIGMA * mad, repeat_range) / median
    else:
        fraction, spread = 0.0, 0.0
    return OutlierFinding(
        subject,
        value,
        round_value,
        median,
        len(population.values),
        max(fraction, 0.0),
        spread,
        1 + len(remeasured),
        tuple(remeasured),
    )


def describe(finding: OutlierFinding, limit: float | None, *, lower_is_better: bool = False) -> str:
    """A finding as a person says it: ``12 % below the median of 15 pairs; limit 7 %``.

    The figure is the deviation beyond the measurement's own spread (what the limit is compared
    with); when part of the deviation is within that spread, the whole deviation is said too.
    """
    def pct(fraction: float) -> str:
        text = f"{fraction * 100:.1f}".removesuffix(".0")
        return f"{text} %"

    direction = "above" if lower_is_better else "below"
    text = f"{pct(finding.beyond_spread)} {direction} the median of {finding.peers} pairs"
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
