"""Peer-relative consistency: a pair far from the cluster's median is a finding.

A contract floor catches a uniformly slow cluster; it does not catch one bad
cable in a fast one (that pair still clears 90 % of line while its peers do
99 %).  These pure functions compare each pair with the median of all pairs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from decimal import Decimal
from typing import Mapping

__all__ = ["Deviation", "below_median", "above_median"]


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
