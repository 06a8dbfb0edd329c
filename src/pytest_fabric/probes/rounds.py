"""Measure a round of disjoint node pairs at once, then hand each pair test its own result.

Pairs of one round share no node, so measuring them concurrently loads every
link once and shortens an all-pairs sweep from N(N-1)/2 to N-1 measurement
slots.  The first pair test of a round triggers the whole round; the others
read the cached result (or the error that pair met).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from ..cluster import NodePair
from ..verdict import Measurement

__all__ = ["RoundCache"]

MeasurePair = Callable[[NodePair], Measurement]


class RoundCache:
    """Results of measured rounds, keyed by (check, round), then by pair id."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, int], dict[str, Measurement | BaseException]] = {}
        self._lock = threading.Lock()

    def measure(self, check: str, pair: NodePair, round_pairs: list[NodePair], measure: MeasurePair) -> Measurement:
        """The measurement of ``pair``, measuring its whole round (``round_pairs``) the first time."""
        key = (check, pair.round)
        with self._lock:
            results = self._results.get(key)
            if results is None or pair.id not in results:
                todo = [p for p in round_pairs if results is None or p.id not in results]
                if pair.id not in {p.id for p in todo}:
                    todo.append(pair)
                fresh = self._run(todo, measure)
                results = {**(results or {}), **fresh}
                self._results[key] = results
        outcome = results[pair.id]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    @staticmethod
    def _run(pairs: list[NodePair], measure: MeasurePair) -> dict[str, Measurement | BaseException]:
        def one(pair: NodePair) -> Measurement | BaseException:
            try:
                return measure(pair)
            except Exception as exc:  # each pair test re-raises its own error
                return exc

        if len(pairs) == 1:
            return {pairs[0].id: one(pairs[0])}
        with ThreadPoolExecutor(max_workers=len(pairs), thread_name_prefix="fabric-round") as pool:
            return dict(zip((p.id for p in pairs), pool.map(one, pairs)))
