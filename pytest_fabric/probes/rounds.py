"""Measure a round of disjoint node pairs at once, then hand each pair test its own result.

Pairs of one round share no node, so measuring them concurrently loads every
link once and shortens an all-pairs sweep from N(N-1)/2 to N-1 measurement
slots.  A round is a batch (:mod:`pytest_fabric.batches`), like a wave of a
per-node check: the first pair test of a round triggers the whole round; the
others read the cached result (or the error that pair met).
"""

from __future__ import annotations

from collections.abc import Callable

from ..batches import BatchCache, Member
from ..cluster import NodePair
from ..verdict import Measurement

__all__ = ["RoundCache"]

MeasurePair = Callable[[NodePair], Measurement]


class RoundCache:
    """Pair rounds as batches of the run's :class:`BatchCache`, keyed by (check, round)."""

    def __init__(self, batches: BatchCache | None = None) -> None:
        self.batches = batches if batches is not None else BatchCache()

    def measure(self, check: str, pair: NodePair, round_pairs: list[NodePair], measure: MeasurePair) -> Measurement:
        """The measurement of ``pair``, measuring its whole round (``round_pairs``) the first time."""
        members = [Member(p.id, p) for p in round_pairs]
        return self.batches.measure(check, ("round", pair.round), Member(pair.id, pair), members, measure)
