"""Peer-relative statistics at scale: one population per check vs a median over all pairs per pair.

An outlier test judges each pair against the median (and MAD) of every pair of its check.
Computed per call, a sweep costs O(pairs^2); computed once after the rounds (consistency.
Population), O(pairs). Prints the time per outlier judgement both ways at 512 nodes with
pairs: all, and the ratio.

    python3 benchmarks/bench_outliers.py
"""

from __future__ import annotations

import random
import time

from pytest_fabric.consistency import Population, outlier

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


if __name__ == "__main__":
    main()
