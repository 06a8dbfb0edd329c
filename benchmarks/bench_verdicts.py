"""Blame over a thousand random clusters: are the nodes sent back the bad ones, and only those?

Each scenario is a cluster of 4 to 512 nodes swept the way a run sweeps it (pairs: ``all up
to 32 nodes, then random:4``, one direction a pair, roles alternating), with every pair check
:mod:`pytest_fabric.judge.blame` reads: TCP, RDMA on 1, 2 or 4 rails, multi-node NCCL (a pair
measured together, no direction). Each figure has three repeats.

Healthy noise: every repeat is the nominal figure times a factor drawn log-uniformly from a
range whose top-to-bottom ratio is 1.01 to 3 (a quiet fabric to the simulated cluster's
3.8-9.4 Gb/s on a busy machine), a quarter of it fixed per pair (its route), the rest per
repeat. Floors sit under the healthy range. Faults, 0 to 3 per cluster, 10% to 90% below:

- ``slow``: the node's every check (its HCA, PCIe, host); ``send`` / ``receive``: TCP and RDMA
  only in that direction; ``flapping``: one rail whose repeats fall at random on a full and a
  low level; ``nccl-only``: only NCCL sees it (GPUDirect, a PCIe switch, the GPU side);
  ``unreachable``: no figure at all (and its peers' measurements with it fail);
- ``link``: 0 to 2 bad paths between two healthy nodes (on one rail or TCP), no node on two of
  them: two bad paths on one node's port are that node's fault.

Fewer bad nodes than half of each node's peers: with more, no baseline without them exists and
the model says cannot tell (a 4-node cluster holds at most one; unreachable nodes do not count).

A bad node *counts* (B) when it is at least 20% and three healthy spreads below its peers in a
series it is bad in; the healthy spread is 1.4826 x MAD of the log figures of healthy pairs
under the scenario's noise (drawn apart: a few pairs' MAD is chance). Nodes sent back that are not bad (healthy or unreachable) are K.
A scenario *rejects* when blame finds anything short; naming no one means no node and no link (a
link names its two ends' cable). A fabric finding alone counts as naming no one here: the
benchmark makes no fabric-wide fault, so a fabric verdict in it is a wrong one, not a finding.
What blame cannot tell it names as retests (the pair again, each end with helpers); as a run
does (measurements/attribution.py), the benchmark measures them and judges everything again, at
most twice: a pair asked again in the second step is measured again (more repeats), each link's
own pair is measured once, and a pair of a check measured alone gives every rail of that check.
The retests of a step run in rounds of disjoint pairs (run/retests.py's ``schedule``, 256 pairs a
round: the default fan-out), each repeat a sample of its own, as ``retest_alone`` takes them.

Load that moves in time (``--load``; off by default: the issue's bar, K 0, is not yet held with
it, see docs/benchmarks.md): in :data:`LOAD_SHARE` of the scenarios (drawn from a generator of their
own: the clusters, faults and noise are the same with the load off) each moment of measurement
(a sweep round's j-th repeat of one check: the pairs of a round start together and repeat one
after another; a retest round's sample) runs slower with the chance :data:`LOAD_ROUNDS`, every
pair in it 30-70% lower (each pair's dip 0.8-1.2 times the moment's: load is not even), the retest
rounds too, where only the suspects and their helpers are measured. Every figure carries its
repeats' round labels (:attr:`~pytest_fabric.judge.blame.Figure.rounds`): the sweep's round and
repeat, a retest's step, round and sample, as measurements/attribution.py labels them. A retest
round of one pair (a suspect with a helper: no pair beside it to read the moment's load by)
measures a control pair at the same moments, as ``retest_alone`` does (run/retests.py
``pick_controls`` from ``control_pool``: two healthy nodes in no retest); its figures join the
model's (``--no-controls``: without them, the run before controls).

    python3 benchmarks/bench_verdicts.py [scenarios] [seed] [only these indices, comma-separated]
        [--no-rounds: figures without round labels, the model as before them]
        [--load: load that moves in time in a share of the scenarios]
        [--jobs=N: judged in N processes, one a core by default; the same scenarios and results]
        [--no-controls: no control pair beside a retest round of one pair]
"""

from __future__ import annotations

import math
import multiprocessing
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_fabric.judge.blame import Blame, Failure, Figure, blame
from pytest_fabric.run.pairs import make_pairs
from pytest_fabric.run.retests import control_pool, pick_controls, schedule

SIZES = [4, 5, 6, 8, 12, 16, 24, 32, 64, 128, 256, 512]
WEIGHTS = [10, 6, 8, 10, 8, 8, 6, 8, 6, 4, 2, 1]
KINDS = ["slow", "send", "receive", "flapping", "nccl-only", "unreachable"]
REPEATS = 3
#: retest steps at most: what cannot tell is measured, everything judged again, and once more
RETEST_STEPS = 2
NOMINAL = {"tcp_throughput": 25e9, "rdma_bandwidth": 196e9, "nccl_allreduce": 85e9}
#: the share of scenarios whose machine has load that moves in time, and in them the chance that
#: one moment (a sweep round's repeat, a retest round's sample) runs slower, and how much slower
LOAD_SHARE = 0.3
LOAD_ROUNDS = 0.05
LOAD_DEPTH = (0.3, 0.7)
#: retest pairs a round: the default --fabric-fanout (512 nodes) counts nodes, two a pair
RETEST_PER_ROUND = 256


@dataclass
class Scenario:
    nodes: list[str]
    figures: list[Figure]
    failures: list[Failure]
    unreachable: dict[str, str]
    faults: dict[str, tuple[str, float, str]]  # node -> (kind, severity, rail)
    links: dict[tuple[str, str], tuple[str, float]]  # pair -> (series, severity)
    noise: float
    #: (series, sender, receiver, each repeat's round label) -> the figure measured then
    measure: Callable[[str, str, str, tuple[str, ...]], Figure | Failure]
    counted: set[str] = field(default_factory=set)
    #: the moments that ran slower (label -> how much), in a scenario with load
    slowed: dict[str, float] = field(default_factory=dict)


def bucket(n: int) -> str:
    return "4-8" if n <= 8 else "12-32" if n <= 32 else "64-128" if n <= 128 else "256-512"


def identifiable(pairs: list[tuple[str, str]], faults: dict[str, tuple[str, float, str]],
                 links: dict[tuple[str, str], tuple[str, float]]) -> bool:
    """Fewer bad figures than half of every node's figures, and of the figures without each bad node."""
    gone = {n for n, f in faults.items() if f[0] == "unreachable"}
    bad = set(faults) - gone
    kept = [p for p in pairs if not set(p) & gone]
    reachable = {n for p in kept for n in p}
    if len(reachable) < 4:
        return False
    # each node's pairs in one pass (a 512-node sweep: 512 scans of every pair were a fifth of the generator)
    own_of: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for p in kept:
        for n in dict.fromkeys(p):
            own_of[n].append(p)
    for node in reachable:
        own = own_of[node]
        if sum(1 for p in links if node in p) > 1:
            return False  # two bad paths on one node are its own port: a node fault, not links
        if node not in bad:
            short = [p for p in own if set(p) & bad or p in links]
            if 2 * len(short) >= len(own):
                return False
        else:
            others = [p for p in kept if node not in p]
            if 2 * sum(1 for p in others if set(p) & bad or p in links) >= len(others):
                return False
    return True


@dataclass
class Load:
    """Load that moves in time: the share of its figure a pair measures at a moment (a round label),
    1, or 30-70% less (uneven per pair) in the moments that ran slower. Each draw from a generator of
    the moment and the pair alone: the same whatever else was measured, the scenario's own draws
    untouched. ``salt`` None: no load."""

    salt: str | None
    #: label -> how much slower that moment ran (0: not)
    depths: dict[str, float] = field(default_factory=dict)

    def depth(self, label: str) -> float:
        if label not in self.depths:
            moment = random.Random(f"{self.salt} {label}")
            self.depths[label] = moment.uniform(*LOAD_DEPTH) if moment.random() < LOAD_ROUNDS else 0.0
        return self.depths[label]

    def share(self, label: str, a: str, b: str) -> float:
        if self.salt is None or not self.depth(label):
            return 1.0
        return 1 - min(0.9, self.depth(label) * random.Random(f"{self.salt} {label} {a} {b}").uniform(0.8, 1.2))


def scenario(rng: random.Random, load: str | None = None, rounds: bool = True) -> Scenario:
    """One cluster, its faults and its sweep; ``load``: the salt of its load in time (None: none);
    ``rounds``: its figures carry their repeats' round labels."""
    n = rng.choices(SIZES, WEIGHTS)[0]
    nodes = [f"node{i:03d}" for i in range(1, n + 1)]
    swept = make_pairs(nodes, "all up to 32 nodes, then random:4")
    pairs = [(p.a, p.b) for p in swept]
    slower = Load(load)
    ratio = math.exp(rng.uniform(math.log(1.01), math.log(3.0)))
    half = math.log(ratio) / 2
    rails = [f"mlx5_{i}" for i in range(rng.choice([1, 2, 4]))]
    faults: dict[str, tuple[str, float, str]] = {}
    for node in rng.sample(nodes, rng.randint(0, 3)):
        fault = (rng.choice(KINDS), rng.uniform(0.10, 0.90), rng.choice(rails))
        if identifiable(pairs, {**faults, node: fault}, {}):
            faults[node] = fault
    unreachable = {node: "ssh: connect to host: Connection timed out" for node, f in faults.items() if f[0] == "unreachable"}
    healthy_pairs = [p for p in pairs if not set(p) & set(faults)]
    links: dict[tuple[str, str], tuple[str, float]] = {}
    for _ in range(rng.randint(0, 2)):
        if healthy_pairs:
            pair = rng.choice(healthy_pairs)
            link = (rng.choice(["tcp_throughput"] + [f"rdma_bandwidth {r}" for r in rails]), rng.uniform(0.10, 0.90))
            if identifiable(pairs, faults, {**links, pair: link}):
                links[pair] = link

    def cap(node: str, series: str, role: str) -> float:
        """The node's share of the nominal figure in this series and role (1: healthy)."""
        if node not in faults:
            return 1.0
        kind, severity, rail = faults[node]
        check = series.split()[0]
        hit = (
            kind == "slow"
            or (kind in ("send", "receive") and role == kind and check != "nccl_allreduce")
            or (kind == "nccl-only" and check == "nccl_allreduce")
        )
        return 1 - severity if hit else 1.0

    series_list = ["tcp_throughput", *(f"rdma_bandwidth {r}" for r in rails), "nccl_allreduce"]
    floor_share = rng.uniform(0.5, 0.9)
    routes: dict[tuple[str, str, str], float] = {}
    # the measurements draw from their own generator: what the model asks to retest does not change
    # the scenarios that follow (every version of the model is judged on the same 1,000 clusters)
    draw = random.Random(rng.random())

    # the flapping ends and uniform(-half, half) as random.uniform computes it (-half + span * random()):
    # the same draws in the same order, without a call and a lookup per repeat
    flapping = {node: (severity, frail) for node, (kind, severity, frail) in faults.items() if kind == "flapping"}
    span = half - -half
    uniform = draw.random

    def measure(series: str, a: str, b: str, at: tuple[str, ...]) -> Figure | Failure:
        check, _, rail = series.partition(" ")
        if a in unreachable or b in unreachable:
            gone = a if a in unreachable else b
            return Failure(check, (a, b), f"{gone}: ssh: connect to host: Connection timed out", gone)
        nominal = NOMINAL[check]
        route = routes.setdefault((series, a, b), math.exp((-half + span * uniform()) / 4))
        share = min(cap(a, series, "send"), cap(b, series, "receive"))
        if links.get((a, b), ("",))[0] == series:
            share *= 1 - links[(a, b)][1]
        flaps = [flapping[end] for end in (a, b) if end in flapping]
        repeats = []
        for j in range(REPEATS):
            level = share
            for severity, frail in flaps:
                if rail == frail and draw.random() < 0.5:
                    level = min(level, 1 - severity)
            repeats.append(nominal * level * route * math.exp((-half + span * uniform()) * 3 / 4) * slower.share(at[j], a, b))
        return Figure(check, (a, b), tuple(repeats), nominal * math.exp(-half) * floor_share, rail,
                      check != "nccl_allreduce", at if rounds else ())

    figures: list[Figure] = []
    failures: list[Failure] = []
    for series in series_list:
        check = series.split(" ", 1)[0]
        for p in swept:
            # the sweep: every pair of a round at once, its repeats one after another (ib_write_bw
            # run after run): repeat j of every pair of the round runs at once
            got = measure(series, p.a, p.b, tuple(f"{check} sweep round {p.round} repeat {j}" for j in range(REPEATS)))
            (figures if isinstance(got, Figure) else failures).append(got)  # type: ignore[arg-type]

    sc = Scenario(nodes, figures, failures, unreachable, faults, links, ratio, measure)
    sc.slowed = slower.depths
    # which bad nodes count: 20% and three healthy spreads below, in a series they are bad in; the
    # healthy spread of this noise from many healthy figures (a few pairs' MAD is chance)
    sample = random.Random(rng.random())
    healthy = sorted(math.log(statistics.median(
        math.exp(sample.uniform(-half, half) / 4 + sample.uniform(-half, half) * 3 / 4) for _ in range(REPEATS)))
        for _ in range(401))
    spread = 1.4826 * statistics.median(abs(v - healthy[200]) for v in healthy)
    for node, (kind, severity, rail) in faults.items():
        if kind == "unreachable" or severity < 0.20:
            continue
        for series in series_list:
            hit = kind == "flapping" and series == f"rdma_bandwidth {rail}" or any(
                cap(node, series, role) < 1 for role in ("send", "receive"))
            if not hit:
                continue
            if -math.log(1 - severity) >= 3 * spread:
                sc.counted.add(node)
                break
    return sc


def judge(sc: Scenario) -> tuple[Blame, int, list[Figure]]:
    """Blame's verdict on a scenario after the retest steps a run takes; the steps taken and the figures they measured."""
    verdict = blame(sc.nodes, sc.figures, failures=sc.failures, unreachable=sc.unreachable)
    rails: dict[str, list[str]] = defaultdict(list)
    for series in dict.fromkeys(f.series for f in sc.figures):
        rails[series.split(" ", 1)[0]].append(series)
    taken: dict[tuple[str, str, str], int] = defaultdict(int)
    extra: list[Figure] = []
    steps = 0
    for step in range(RETEST_STEPS):
        # what a run does next (measurements/attribution.py, _asks): each pair the model asks,
        # again in a later step while it still asks; each link's own pair once; a pair of a
        # check measured alone gives every rail of it. Then everything is judged again.
        wanted = {(series.split(" ", 1)[0], a, b, step) for series, a, b in verdict.retests}
        wanted |= {(lf.series.split(" ", 1)[0], lf.nodes[0], lf.nodes[1], 0) for lf in verdict.links if len(lf.nodes) == 2}
        todo = sorted({(check, a, b) for check, a, b, most in wanted if taken[(check, a, b)] <= most})
        if not todo:
            break
        # as retest_alone runs them: each check's pairs in rounds of disjoint pairs, sample j of a
        # round's pairs together (each repeat here a sample)
        moment: dict[tuple[str, str, str], int] = {}
        # a round whose pair has no contemporary (one pair: a suspect and a helper) measures a control
        # pair beside it, at the same moments (run/retests.py pick_controls, as retest_alone does)
        pool = control_pool(sc.nodes, {n: b.kind for n, b in verdict.nodes.items()}, verdict.suspects,
                            [(a, b) for _, a, b in todo])
        controls: list[tuple[str, int, tuple[str, str]]] = []
        for check in sorted({c for c, _, _ in todo}):
            plan = schedule([(a, b) for c, a, b in todo if c == check], RETEST_PER_ROUND)
            for i, (round_pairs, control) in enumerate(zip(plan, pick_controls(plan, pool, RETEST_PER_ROUND))):
                for a, b in round_pairs:
                    moment[(check, a, b)] = i
                if control is not None and "--no-controls" not in sys.argv:
                    controls.append((check, i, control))
        for check, a, b in todo:
            taken[(check, a, b)] += 1
            at = tuple(f"{check} retest {step} round {moment[(check, a, b)]} sample {j}" for j in range(REPEATS))
            extra += [f for f in (sc.measure(series, a, b, at) for series in rails[check]) if isinstance(f, Figure)]
        for check, i, (a, b) in controls:
            at = tuple(f"{check} retest {step} round {i} sample {j}" for j in range(REPEATS))
            extra += [f for f in (sc.measure(series, a, b, at) for series in rails[check]) if isinstance(f, Figure)]
        steps += 1
        verdict = blame(sc.nodes, [*sc.figures, *extra], failures=sc.failures, unreachable=sc.unreachable)
    return verdict, steps, extra


def _slowed(sc: Scenario) -> str:
    """How many moments ran slower, for the lines on what went wrong."""
    slow = [depth for depth in sc.slowed.values() if depth]
    return f", {len(slow)} of {len(sc.slowed)} moments slower ({min(slow) * 100:.0f}-{max(slow) * 100:.0f}%)" if slow else ""


@dataclass
class Tally:
    """What one share of the scenarios came to (a worker's, or all of them added up)."""

    judged: int = 0
    loaded: int = 0
    healthy_back: int = 0
    bad_total: int = 0
    bad_back: int = 0
    nameless: int = 0
    retested: int = 0
    cpu: float = 0.0
    cells: dict[tuple[str, str], list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    #: (scenario index, line) on what went wrong
    misses: list[tuple[int, str]] = field(default_factory=list)

    def add(self, other: Tally) -> None:
        for name in ("judged", "loaded", "healthy_back", "bad_total", "bad_back", "nameless", "retested", "cpu"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for key, (found, of) in other.cells.items():
            self.cells[key][0] += found
            self.cells[key][1] += of
        self.misses += other.misses


def tally(total: int, seed: int, flags: frozenset[str], only: frozenset[int] | None, part: int, parts: int) -> Tally:
    """Scenarios ``part``, ``part + parts``, ... of ``total`` judged. Every scenario is drawn in every part
    (each one's cluster comes from the same generator, after the ones before it): the same 1,000
    clusters however many parts judge them."""
    rng = random.Random(seed)
    # which scenarios have load, from a generator of their own: every scenario's cluster is the same with it off
    loads = random.Random(f"load {seed}")
    out = Tally()
    cpu = time.process_time()
    for index in range(total):
        salt = f"{seed} {index}" if loads.random() < LOAD_SHARE and "--load" in flags else None
        sc = scenario(rng, salt, "--no-rounds" not in flags)
        if index % parts != part or (only is not None and index not in only):
            continue
        out.judged += 1
        out.loaded += salt is not None
        verdict, steps, _ = judge(sc)
        out.retested += steps
        back = set(verdict.send_back)
        wrong = back - {n for n, f in sc.faults.items() if f[0] != "unreachable"}
        out.healthy_back += len(wrong)
        if wrong:
            out.misses.append((index, f"scenario {index}: {len(sc.nodes)} nodes, noise x{sc.noise:.2f}{_slowed(sc)}, sent back "
                                      f"healthy {sorted(wrong)}; faults {sc.faults}; {[verdict.nodes[w].message for w in sorted(wrong)]}"))
        size = bucket(len(sc.nodes))
        for node, (kind, _, _) in sc.faults.items():
            if kind == "unreachable":
                cell = out.cells[(kind, size)]
                cell[1] += 1
                cell[0] += int(node not in back and any(u.node == node for u in verdict.unmeasured))
                continue
            if node in sc.counted:
                out.bad_total += 1
                cell = out.cells[(kind, size)]
                cell[1] += 1
                if node in back:
                    out.bad_back += 1
                    cell[0] += 1
                else:
                    out.misses.append((index, f"scenario {index}: {len(sc.nodes)} nodes, noise x{sc.noise:.2f}{_slowed(sc)}, missed "
                                              f"{node} {sc.faults[node]}: {verdict.nodes[node].kind}: {verdict.nodes[node].message[:300]}"))
        found_links = {tuple(sorted(lf.nodes)) for lf in verdict.links}
        for pair in sc.links:
            cell = out.cells[("link", size)]
            cell[1] += 1
            cell[0] += int(tuple(sorted(pair)) in found_links)
        if verdict.rejects and not verdict.names_someone:
            out.nameless += 1
            out.misses.append((index, f"scenario {index}{_slowed(sc)}: rejects naming no one: {verdict.fabric} "
                                      f"{[(n, b.kind) for n, b in verdict.nodes.items() if b.kind != 'healthy']}"))
    out.cpu = time.process_time() - cpu
    out.cells = dict(out.cells)  # type: ignore[assignment]  # a plain dict crosses to the parent process
    return out


def _tally_part(args: tuple[int, int, frozenset[str], frozenset[int] | None, int, int]) -> Tally:
    return tally(*args)


def main() -> None:
    flags = frozenset(a for a in sys.argv[1:] if a.startswith("--") and not a.startswith("--jobs="))
    unknown = flags - {"--no-rounds", "--load", "--no-controls"}
    if unknown:
        sys.exit(f"unknown option(s): {', '.join(sorted(unknown))} (--no-rounds, --load, --no-controls, --jobs=N)")
    jobs_flag = [a for a in sys.argv[1:] if a.startswith("--jobs=")]
    # one process a core: the scenarios are independent, and the bar is wall time on the machine at hand
    jobs = int(jobs_flag[-1].split("=", 1)[1]) if jobs_flag else len(os.sched_getaffinity(0))
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    total = int(args[0]) if len(args) > 0 else 1000
    seed = int(args[1]) if len(args) > 1 else 29
    # only these scenario indices judged (each scenario is drawn whatever is judged: the same cluster per index)
    only = frozenset(int(i) for i in args[2].split(",")) if len(args) > 2 else None
    started = time.perf_counter()
    parts = [(total, seed, flags, only, part, max(jobs, 1)) for part in range(max(jobs, 1))]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            tallies = pool.map(_tally_part, parts)
    else:
        tallies = [_tally_part(parts[0])]
    t = Tally()
    for part_tally in tallies:
        t.add(part_tally)
    elapsed = time.perf_counter() - started
    share = 100.0 * t.bad_back / t.bad_total if t.bad_total else 100.0
    print(f"scenarios: {t.judged}")
    print(f"healthy nodes sent back: {t.healthy_back}")
    print(f"bad nodes sent back: {t.bad_back} of {t.bad_total} ({share:.1f}%)")
    print(f"rejects naming no one: {t.nameless}")
    print(f"({t.loaded} with load that moves in time; round labels {'off' if '--no-rounds' in flags else 'on'})")
    sizes = ["4-8", "12-32", "64-128", "256-512"]
    print(f"{'fault kind':<12}" + "".join(f"{s:>12}" for s in sizes))
    for kind in [*KINDS, "link"]:
        row = []
        for s in sizes:
            found, of = t.cells.get((kind, s), [0, 0])
            row.append(f"{found}/{of}" if of else "-")
        print(f"{kind:<12}" + "".join(f"{r:>12}" for r in row))
    print("(cells: bad nodes sent back / bad nodes counted; unreachable: listed apart and not sent back; "
          f"link: bad cables named / all, any severity); {t.retested} retest steps (at most {RETEST_STEPS} a scenario) measured "
          f"what would tell; {t.cpu:.1f} s of CPU in {jobs} process(es), {elapsed:.1f} s of wall time")
    # what went wrong, healthy nodes sent back and nameless rejects first (to stderr: the lines above are the result)
    misses = sorted(t.misses, key=lambda m: (0 if "sent back healthy" in m[1] else 1 if "naming no one" in m[1] else 2, m[0]))
    for _, line in misses[:25]:
        print("  " + line[:700], file=sys.stderr)


if __name__ == "__main__":
    main()
