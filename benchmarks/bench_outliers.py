"""Peer-relative statistics at scale: one population per check vs a median over all pairs per pair.

An outlier test judges each pair against the median (and MAD) of every pair of its check.
Computed per call, a sweep costs O(pairs^2); computed once after the rounds (consistency.
Population), O(pairs). Prints the time per outlier judgement both ways at 512 nodes with
pairs: all, and the ratio.

Then the retests outliers and attribution make at 512 nodes: suspects re-measured against two
helpers each way, 3 samples a pair, one pair at a time (before issue 21) or in rounds of disjoint
pairs (pytest_fabric.run.retests, --fabric-fanout 64: 32 pairs a round). Prints the measurements one
after another against the rounds, their ratio (the wall time of the retests, for a measurement of
any length D), and what scheduling them costs the controller.

    python3 benchmarks/bench_outliers.py
"""

from __future__ import annotations

import random
import time

from pytest_fabric.judge.consistency import Population, outlier
from pytest_fabric.run.retests import schedule, spread_helpers

NODES = 512
SAMPLE = 200  # judgements timed; a run makes one per pair


def main() -> None:
    rng = random.Random(7)
    values = {f"n{a:03d}<->n{b:03d}": 190e9 * rng.uniform(0.97, 1.0) for a in range(NODES) for b in range(a + 1, NODES)}
    subjects = rng.sample(list(values), SAMPLE)
    started = time.perf_counter()
    for subject in subjects[:20]:
        outlier(values, subject)  # a median and MAD over every pair, each call
    per_call = (time.perf_counter() - started) / 20
    started = time.perf_counter()
    population = Population.of(values)
    once = time.perf_counter() - started
    started = time.perf_counter()
    for subject in subjects:
        outlier(population, subject)
    cached = (time.perf_counter() - started) / SAMPLE
    pairs = len(values)
    print(f"{pairs} pairs ({NODES} nodes, pairs: all)")
    print(f"per call, recomputed: {per_call * 1e3:.1f} ms  -> {per_call * pairs / 3600:.1f} h for a sweep")
    print(f"population once: {once * 1e3:.0f} ms, then {cached * 1e6:.1f} us per pair -> {(once + cached * pairs):.1f} s")
    print(f"ratio recomputed/once over a sweep: {per_call * pairs / (once + cached * pairs):.0f}x")
    retests()


def retests(samples: int = 3, per_round: int = 32) -> None:
    nodes = [f"n{i:03d}" for i in range(NODES)]
    rng = random.Random(11)
    for count in (1, 10, 40, 100):
        suspects = rng.sample(nodes, count)
        good = [n for n in nodes if n not in suspects]
        started = time.perf_counter()
        helpers = spread_helpers(suspects, good, 2, nodes)
        pairs = [p for s in suspects for h in helpers[s] for p in ((s, h), (h, s))]
        rounds = schedule(pairs, per_round)
        cost = time.perf_counter() - started
        serial = len(pairs) * samples
        batched = len(rounds) * samples
        print(f"retests, {count} suspect(s) x 2 helpers x 2 ways, {samples} samples: {serial} measurements one at a "
              f"time vs {batched} rounds ({len(rounds)} a sample) -> {serial / batched:.0f}x; scheduled in {cost * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
