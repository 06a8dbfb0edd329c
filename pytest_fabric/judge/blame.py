"""Blame: which node, link or fabric a pair check's figures point at. One model for every pair check.

Every pair check (TCP, RDMA per rail, GPUDirect, multi-node NCCL, scaling) hands its figures
here as :class:`Figure` values: the nodes measured together (sender first where the direction
matters), every repeat, and the floor the profile sets. Each check (and each rail of it) is a
*series*, judged on its own; the verdicts of all series are then merged per node.

The model, per series, on the logarithm of each figure (bandwidths compare as ratios: 50% below
is the same finding at 10 Gb/s and at 400 Gb/s):

- A figure is the median of its repeats. Repeats that fall into two levels (a gap between them
  far wider than the series' usual repeat range) are *split*: a rail that retrains, not noise.
- Repeats with round labels (:attr:`Figure.rounds`: which were measured at the same time) are not
  taken as independent in time: a low repeat measured while the pairs measured with it (sharing
  no node with it) were as low against their own medians is the machine's load, not the pair's,
  and leaves its figure first (:func:`_unloaded`). Without labels every repeat counts.
- A node's **baseline** is built without it: the median and the spread (1.4826 x MAD) of every
  figure it is *not* in, leaving out the nodes already found at fault. The node's own figures
  (as sender, as receiver, and all together) are compared with that baseline: its median must
  lie at least :attr:`Settings.spreads` spreads below it, corrected for how many figures the
  median rests on, and at least :attr:`Settings.min_drop` below it (or under the floor while
  the baseline is above it: the floor is the second test). Two figures at least: one pair
  names neither of its ends.
- Nodes are found one at a time, the clearest first; each found node's figures leave every
  other node's baseline and own figures, so a healthy peer of a bad node is not dragged down by
  it. Every finding is then re-judged against the baseline without all the others, until
  nothing changes.
- A node no series finds alone may be found over every series together (a slow host or sender
  a few spreads under in TCP and in each rail): :func:`_together`.
- In a small series (under 60 figures) a node whose every figure lies under every figure without
  it, the rest but its lowest 10% under with their repeats under the others' beyond chance (a
  rank-sum), is found too, where the few figures without it spread too wide for the bar
  (:meth:`_Series._apart`); a chance under one in a hundred asks for a retest step.
- Short figures: a node in every short figure of a role, with two peers or more each good with
  others, is that node's fault (:meth:`_Series._common`); a figure far under what each end
  measures with its other peers is a link whatever either end's pattern (:meth:`_Series._under_both`);
  a short figure one of whose ends is good with others is the other end's when that end's other figures
  in its role (two at least) lie under its baseline less likely by chance than one in a hundred
  (:meth:`_Series._one_end`: a cable would leave them at the baseline).
  A node found slow both ways in another series (a slow host) leaves this series' baselines (it is
  judged here too, against the rest), links and fabric test.
- **node fault** (send, receive or both), **unstable** (more of its figures reach a low level,
  beside repeats at the baseline, than healthy figures would by chance: :meth:`_Series._levels`,
  against a bar for the series' size, :data:`_UNSTABLE_NODES`; or the end of one bad link on two
  levels whose figures with its other peers reach as low, :meth:`_Series._flapping_end`),
  **link fault** (one figure far below the baseline of neither end while both ends are good
  elsewhere), **fabric** (more bad figures than :attr:`Settings.fabric_share` of the series with
  no node pattern, or the baseline itself under the floor; the bad figures' pairs are asked alone
  first, and a pair good alone counts for no one: :meth:`_Series._one_offs`), **cannot tell** (bad figures, but
  too little to build a baseline or to tell an end: the reason and the run that would tell;
  in a series of 8 nodes or fewer, the run measures every pair of it again, the baseline's too, and
  the other way: each node then has a figure with every peer in each role),
  **healthy**.
- Nodes that could not be reached, or with no figure at all, are :class:`Unmeasured`: never in
  a series, never in :attr:`Blame.send_back`. A failure the transport charges to a node
  (:class:`Failure`) counts against no one else.

Everything is a pure function of the input: figures are put in a canonical order first and
every comparison is made on rounded numbers, so the same evidence gives the same verdict.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import Literal

__all__ = [
    "Blame", "Failure", "Figure", "Finding", "LinkFault", "NodeBlame", "Settings", "Unmeasured", "baseline_without",
    "baselines_without", "blame",
]

Kind = Literal["node fault", "unstable", "link fault", "cannot tell", "fabric", "healthy"]
Direction = Literal["send", "receive", "both"]

#: the order in which one node's findings over several series decide its class
RANK: dict[str, int] = {"healthy": 0, "fabric": 1, "cannot tell": 2, "link fault": 3, "unstable": 4, "node fault": 5}
#: MAD to a normal spread
_MAD_SCALE = 1.4826
#: the median of k figures varies 1.2533 / sqrt(k) as much as one figure (a normal's efficiency)
_MEDIAN_SCALE = 1.2533
#: the figure two thirds of k are at or below varies at most this / sqrt(k) as much (the highest of
#: two: 1.17, of three: 1.30)
_RANK_SCALE = 1.41
#: in a series of this many figures or more, a node whose figures lie under this share of the bar
#: of every figure's baseline is passed over without its own (one node moves a large MAD little)
_ROUGH_FROM = 60
_ROUGH = 0.5
#: a baseline of fewer figures than this has a spread of chance (212, 213 and 182 Gb/s: a MAD of
#: 0.7%): a node must lie under all of it, and two levels must show inside two figures
_SMALL_BASELINE = 10
#: a series of this many nodes or fewer is measured again whole when anything in it is in doubt
_REMEASURE_UP_TO = 8
#: two repeats of a figure this many min_drop apart, with none between, are two levels (not noise)
_JUMP = 3.0
#: low repeats this unlikely by chance (but not beyond unstable_chance) ask for a retest step
_SUSPECT_CHANCE = 1e-2
#: :attr:`Settings.unstable_chance` is the bar in a series of this many nodes (the largest run); a
#: series of n nodes makes n such tests, so its bar is that times this / n: the chance that a run
#: sends a healthy node back as unstable is the same whatever its size (a 4-node series: 1.3e-4)
_UNSTABLE_NODES = 512
#: a bad link whose own repeats are on two levels belongs to the end whose other figures reach that
#: low beside high repeats at least this unlikely by chance (and the other end's do not)
_LINK_END_CHANCE = 0.05
#: a short figure belongs to the end whose other figures in its role lie under its baseline this unlikely by
#: chance, the other end good with its other peers (:meth:`_Series._one_end`)
_END_CHANCE = 1e-2
#: a repeat equal to a level (within rounding) is at it
_EPS = 1e-9
#: a round (a round label's repeats, :func:`_unloaded`) dipped for the machine when its contemporaries read
#: it this many spreads of one reading under their own medians (:func:`_reading_spread`; and ``min_drop`` at least)
_LOAD_SPREADS = 2.0
#: the mean range of n normal samples in standard deviations (d2 of quality control), n = 2..12
_D2 = (1.128, 1.693, 2.059, 2.326, 2.534, 2.704, 2.847, 2.970, 3.078, 3.173, 3.258)


@dataclass(frozen=True)
class Figure:
    """One measurement of nodes together: higher is better (a bandwidth), every repeat kept.

    ``nodes`` is (sender, receiver) when ``directed``; otherwise the group measured together
    (a multi-node NCCL pair, a scaling group). ``rail``: the port of a per-rail check.
    ``rounds``: when each repeat was measured, one opaque label a repeat (empty: not known):
    repeats of one label were measured at the same time, beside every other pair measured then
    (:func:`_unloaded` reads them).
    """

    check: str
    nodes: tuple[str, ...]
    repeats: tuple[float, ...]
    floor: float | None = None
    rail: str = ""
    directed: bool = True
    rounds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.rounds and len(self.rounds) != len(self.repeats):
            raise ValueError(f"{self.check} {'/'.join(self.nodes)}: {len(self.rounds)} round labels for "
                             f"{len(self.repeats)} repeats")

    @property
    def series(self) -> str:
        """The check and the rail: each is judged on its own."""
        return f"{self.check} {self.rail}" if self.rail else self.check


@dataclass(frozen=True)
class Failure:
    """A measurement that produced no figure. ``charged``: the node the error belongs to (the
    transport of that node raised it: its sshd stopped, the launch named it), if known."""

    check: str
    nodes: tuple[str, ...]
    message: str
    charged: str | None = None


@dataclass(frozen=True)
class Settings:
    """How far below its baseline a node or link must be to be blamed."""

    #: a node: how many of its own spreads its figures must lie below the baseline, where its own
    #: spread is that of a median of its k figures against one of the baseline's m
    #: (1.2533 x sqrt(1/k + 1/m) of one figure's spread, 1.4826 x MAD of the baseline's figures):
    #: high, because a run makes a test for every node in every series and direction
    confidence: float = 4.5
    #: and never fewer than this many spreads of one figure, however many figures it has
    least_spreads: float = 2.0
    #: a link (one figure): this many spreads of one figure below the baseline without its ends
    spreads: float = 4.0
    #: and at least this far below the baseline, as a fraction (a 3% dip on a quiet fabric is real
    #: but nothing to send back)
    min_drop: float = 0.10
    #: the smallest relative spread assumed (identical figures would make any dip "many spreads")
    min_spread: float = 0.01
    #: a split: the gap between two levels of repeats is this many times the series' usual range
    split_ranges: float = 2.0
    #: at least this share of a node's repeats low, in two figures or more that have high ones too
    unstable_share: float = 1 / 6
    #: and no more likely by chance than this: as many of its figures reaching that low, each with
    #: the chance a healthy figure has (:meth:`_Series._levels`), times the levels tried; low, because
    #: a run tests every node in every series (the bar of a 512-node series; a smaller one's is
    #: wider by 512 / its nodes: :data:`_UNSTABLE_NODES`)
    unstable_chance: float = 1e-6
    #: bad figures with no node pattern beyond this share of the series: the fabric, not links
    fabric_share: float = 0.05
    #: a baseline needs this many figures (and as many nodes in them)
    min_baseline: int = 3
    #: helpers a retest that would tell measures a suspect end with
    helpers: int = 2


@dataclass(frozen=True)
class Finding:
    """What one series says about one node."""

    series: str
    kind: Kind
    text: str
    direction: Direction | None = None
    peers: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeBlame:
    """One measured node's class over every series, with what each series found."""

    node: str
    kind: Kind
    message: str
    direction: Direction | None = None
    findings: tuple[Finding, ...] = ()
    #: for cannot tell: the run that would tell
    tell: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node, "verdict": self.kind, "direction": self.direction, "message": self.message,
            "tell": self.tell,
            "findings": [{"series": f.series, "kind": f.kind, "direction": f.direction, "peers": list(f.peers),
                          "text": f.text} for f in self.findings],
        }


@dataclass(frozen=True)
class Unmeasured:
    """A node with no figure to judge: the reason and the fix. Never sent back."""

    node: str
    reason: str
    fix: str

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "reason": self.reason, "fix": self.fix}


@dataclass(frozen=True)
class LinkFault:
    """One figure bad while both its ends are good elsewhere: the cable or switch ports between."""

    series: str
    nodes: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class Blame:
    """Per measured node its class; the unmeasured apart; the links and the fabric findings."""

    nodes: Mapping[str, NodeBlame]
    unmeasured: tuple[Unmeasured, ...] = ()
    links: tuple[LinkFault, ...] = ()
    fabric: tuple[str, ...] = ()
    #: (series, sender, receiver): the measurements that would tell what "cannot tell" could not
    retests: tuple[tuple[str, str, str], ...] = ()
    #: (series, sender, receiver): the figures far below the rest a fabric finding counts (not the floor's:
    #: that is every figure); the run runs the round again of each that its pair measured alone clears
    fabric_pairs: tuple[tuple[str, str, str], ...] = ()
    #: the nodes those retests are about (a suspect, a short figure's ends; their helpers are not):
    #: a control pair measured beside a retest round never takes one (run/retests.py ``pick_controls``)
    suspects: tuple[str, ...] = ()

    @property
    def send_back(self) -> tuple[str, ...]:
        """Nodes with a measured fault of their own (node fault, unstable), sorted."""
        return tuple(sorted(n for n, b in self.nodes.items() if b.kind in ("node fault", "unstable")))

    @property
    def rejects(self) -> bool:
        """Does anything measured fall short: a fault, the fabric, or bad figures no one can be told for?"""
        return bool(self.links or self.fabric) or any(b.kind != "healthy" for b in self.nodes.values())

    @property
    def names_someone(self) -> bool:
        """A node to send back, or a link."""
        return bool(self.send_back or self.links)


# --------------------------------------------------------------------------- numbers


def _q(x: float) -> float:
    """Rounded before any comparison: the verdict must not hang on the last bits of a float."""
    return round(x, 9)


def _median(sorted_values: Sequence[float]) -> float:
    n = len(sorted_values)
    mid = n // 2
    return sorted_values[mid] if n % 2 else (sorted_values[mid - 1] + sorted_values[mid]) / 2


@dataclass
class _Pool:
    """The sorted log figures of a series, from which a node's leave-one-out median is read
    without sorting again: only the node's own few figures are taken out."""

    values: list[float]

    def positions(self, removed: Iterable[float]) -> list[int]:
        taken: list[int] = []
        for v in sorted(removed):
            i = bisect_left(self.values, v)
            while i in taken:  # equal figures: each removal takes the next copy
                i += 1
            taken.append(i)
        return sorted(taken)

    def rank(self, j: int, taken: Sequence[int]) -> float:
        """The j-th smallest value once the values at ``taken`` are left out."""
        idx = j
        for p in taken:
            if p <= idx:
                idx += 1
            else:
                break
        return self.values[idx]

    def median_without(self, removed: Sequence[float]) -> float | None:
        n = len(self.values) - len(removed)
        if n <= 0:
            return None
        taken = self.positions(removed)
        if n % 2:
            return self.rank(n // 2, taken)
        return (self.rank(n // 2 - 1, taken) + self.rank(n // 2, taken)) / 2


# --------------------------------------------------------------------------- one series


@dataclass(frozen=True)
class _Fig:
    figure: Figure
    y: float  # log of the median repeat
    split: bool
    low: float  # log of the lower level when split
    index: int
    range: float  # from the lowest repeat to the highest, in log
    logs: tuple[float, ...]  # every repeat, in log, sorted


@dataclass(frozen=True)
class _Levels:
    """A node's repeats on two levels: the chance of as many low ones, the figures with them."""

    chance: float
    split: list[_Fig]
    lows: int
    repeats: int
    cut: float  # the low level: repeats at or under it (log)
    mixed: int  # figures with a repeat at the healthy level too
    share: float  # the chance of one healthy figure reaching that low
    #: the chance in a normal tail of the spread as read (believing it): under
    #: :data:`_SUSPECT_CHANCE` asks for a retest step, whose repeats make the spread a reading
    hint: float = 1.0


@dataclass
class _Score:
    node: str
    kind: Kind
    strength: float
    direction: Direction | None
    text: str
    peers: tuple[str, ...]


def _unloaded(figures: Sequence[Figure], min_gap: float) -> _Time:
    """The figures without the repeats the machine's load explains: a repeat measured while every pair
    measured with it was slower by as much is the time's, not the pair's.

    Repeats are read as independent in time, but a machine's load moves in time: for a few seconds
    everything measured at once is slower (the simulated cluster, two test workers on two cores:
    a healthy node's pairs in one retest round at 2.8-4.8 Gb/s against 11.8, the round's other pair
    as low, and the node "unstable"). Each repeat's round label (:attr:`Figure.rounds`) says what was
    measured with it. For a repeat of figure F in round L:

    - F's dip: the median of F's repeats of other rounds over the repeat (in log); under ``min_drop``
      it is no low repeat and stays (only a low repeat needs explaining).
    - The round's dip: over the *contemporaries*, the figures with repeats in L that share no node
      with F (a node's own fault is in every figure of it, never in theirs), each one's median of
      other rounds over its median in L, the median of those. A contemporary measured in L alone has
      no median over time (its median is L's), and reads nothing. One contemporary is enough: a
      4-node retest round holds two pairs.
    - The round dipped when its dip is ``min_drop`` (the cut :meth:`_Series._levels` counts low
      repeats by) and :data:`_LOAD_SPREADS` spreads of one reading (:func:`_reading_spread`: healthy
      contemporaries read that far by chance) or more; the repeat is explained when its own dip
      exceeds the round's by no more than the round's dip and that bar together (load is not even:
      that round's pairs ranged from 2.8 to 4.8 Gb/s, one twice as far down in log as another, and
      the bar is how far one figure's reading strays from its round's by chance).

    Explained repeats leave their figure; a figure all of whose repeats are explained keeps them all
    (there is nothing better to judge it on). Each dip is relative to a figure's own median over time,
    so a fault that holds at every time stays whole: a slow node, a bad cable, a whole fabric under
    its floor. A rail that flaps dips at random rounds whose other pairs do not: its low repeats stay
    and it is unstable as before (only a flap inside a round that dipped is lost). The figures are
    read again without the repeats explained until no more leave (two dipped repeats of three hide
    each other's dip at first). A figure most of whose other rounds dipped too has no quiet median
    to show its own dip by, and a round measured alone (one pair) none to read it by: they stay as
    measured. Figures without labels, or with one round, are unchanged and read as no contemporary."""
    out = list(figures)
    if all(len(set(f.rounds)) < 2 for f in out):
        return _Time(out)
    bar: float | None = None
    rounds: dict[str, _Round] = {}
    changed = False
    # read again without the repeats explained, until none more is: a round with two of a figure's three
    # repeats dipped leaves each one's median elsewhere half dipped (the other), which hides both dips
    # until one of them is gone
    for _ in range(max((len(f.repeats) for f in figures), default=0)):
        logs = [[math.log(max(r, 1e-300)) for r in f.repeats] for f in out]
        timed = [i for i, f in enumerate(out) if len(set(f.rounds)) >= 2]
        apart, rounds = _readings(out, logs, timed)
        if bar is None:
            # the bar from the figures as measured: reading it again without the explained repeats
            # would narrow it by what it explained
            bar = max(min_gap, _LOAD_SPREADS * _reading_spread(rounds.values()))
        changed = False
        q_gap = _q(min_gap)
        for i in timed:
            f = out[i]
            # a repeat under min_drop of its figure's median elsewhere is no low repeat (most are not)
            kept = [_q(apart[i][label] - v) < q_gap
                    or not _explained(i, label, out, apart[i][label] - v, rounds[label], min_gap, bar)
                    for v, label in zip(logs[i], f.rounds)]
            if any(kept) and not all(kept):
                out[i] = replace(f, repeats=tuple(r for r, k in zip(f.repeats, kept) if k),
                                 rounds=tuple(r for r, k in zip(f.rounds, kept) if k))
                changed = True
        if not changed:
            break
    if changed:  # the last pass left more: its readings were before
        logs = [[math.log(max(r, 1e-300)) for r in f.repeats] for f in out]
        rounds = _readings(out, logs, [i for i, f in enumerate(out) if len(set(f.rounds)) >= 2])[1]
    return _Time(out, rounds, bar or 0.0)


@dataclass
class _Time:
    """What the round labels say (:func:`_unloaded`): the figures without the repeats load explains, every
    round's readings of them, the bar a round's dip clears to be load, and per figure how many of its
    repeats lie in rounds no contemporary reads (measured alone: load there cannot be told)."""

    figures: list[Figure]
    rounds: dict[str, _Round] = field(default_factory=dict)
    bar: float = 0.0
    #: figure -> its repeats in rounds no contemporary reads (:func:`_unread`), read when asked
    unread: dict[int, int] = field(default_factory=dict)

    def unread_of(self, i: int) -> int:
        if not self.rounds:
            return 0
        if i not in self.unread:
            self.unread[i] = _unread(self.figures[i], self.rounds)
        return self.unread[i]


def _unread(f: Figure, rounds: Mapping[str, _Round]) -> int:
    """How many of ``f``'s repeats lie in rounds that no figure sharing no node with it reads."""
    count = 0
    for label in f.rounds:
        read = rounds.get(label)
        near = {j for n in f.nodes for j in read.by_node.get(n, ())} if read is not None else set()
        count += read is None or len(near) >= len(read.readings)
    return count


@dataclass
class _Round:
    """One round's readings (:func:`_unloaded`): each timed figure's median outside the round over its
    median in it (the round's dip as that figure reads it), sorted once, and the figures of each node."""

    readings: dict[int, float]
    by_node: dict[str, list[int]]
    pool: _Pool


def _readings(figures: Sequence[Figure], logs: Sequence[Sequence[float]],
              timed: Sequence[int]) -> tuple[dict[int, dict[str, float]], dict[str, _Round]]:
    """Each timed figure's median outside each of its rounds, and every round's readings."""
    apart: dict[int, dict[str, float]] = {}
    rounds: dict[str, _Round] = {}
    for i in timed:
        apart[i] = {}
        own = _Pool(sorted(logs[i]))  # the median without one round's repeats, not sorted again per round
        inside: dict[str, list[float]] = {}
        for v, label in zip(logs[i], figures[i].rounds):
            inside.setdefault(label, []).append(v)
        for label, values in inside.items():
            # one repeat a round (the usual): the median of the rest read off the sorted repeats
            outside = _median_but(own.values, values[0]) if len(values) == 1 else own.median_without(values)
            assert outside is not None  # two rounds at least
            apart[i][label] = outside
            read = rounds.get(label)
            if read is None:
                read = rounds[label] = _Round({}, {}, _Pool([]))
            read.readings[i] = outside - (values[0] if len(values) == 1 else _median(sorted(values)))
            for n in figures[i].nodes:
                read.by_node.setdefault(n, []).append(i)
    for read in rounds.values():
        read.pool = _Pool(sorted(read.readings.values()))
    return apart, rounds


def _median_but(values: Sequence[float], v: float) -> float:
    """The median of sorted ``values`` (two or more) without one copy of ``v``."""
    k = bisect_left(values, v)
    m = len(values) - 1

    def at(j: int) -> float:
        return values[j] if j < k else values[j + 1]

    return at(m // 2) if m % 2 else (at(m // 2 - 1) + at(m // 2)) / 2


def _explained(i: int, label: str, figures: Sequence[Figure], own: float, read: _Round, min_gap: float,
               bar: float) -> bool:
    """Is figure i's repeat in round ``label``, ``own`` under the figure's median elsewhere, the round's
    load (:func:`_unloaded`)? ``read``: the round's readings."""
    if _q(own) < _q(min_gap):
        return False  # no low repeat: nothing to explain
    # the readings of the figures sharing a node with it (itself among them) left out: its contemporaries'
    near = {j for n in figures[i].nodes for j in read.by_node.get(n, ())}
    load = read.pool.median_without([read.readings[j] for j in near])
    if load is None:
        return False  # measured alone in its round: nothing to read the round by
    return _q(load) >= _q(bar) and _q(own - load) <= _q(load + bar)


def _reading_spread(rounds: Iterable[_Round]) -> float:
    """How far one figure's reading of a round (:func:`_unloaded`) dips by chance: the spread (1.4826 x
    MAD) of each round's readings around that round's median, over every round read twice or more.
    Load is common to a round's readings and leaves this out; the figures' ranges, or the readings
    around none, would be the load's (a round with one repeat dipped reads the dip in that repeat,
    and half of it the other way in the figure's other two)."""
    around: list[float] = []
    for read in rounds:
        k = len(read.pool.values)
        if k >= 2:
            # a reading strays from a median it is part of less than from another's: by about
            # sqrt(1 - 1/k) (two readings lie each half their difference from their median)
            mid = _median(read.pool.values)
            widen = math.sqrt(k / (k - 1))
            around += [abs(d - mid) * widen for d in read.pool.values]
    return _MAD_SCALE * _median(sorted(around)) if around else 0.0


def _series_figures(figures: Sequence[Figure], min_gap: float, split_ranges: float) -> list[_Fig]:
    logs = [sorted([math.log(max(r, 1e-300)) for r in f.repeats]) for f in figures]
    ranges = sorted(ls[-1] - ls[0] for ls in logs if len(ls) >= 2)
    usual = _median(ranges) if ranges else 0.0
    out = []
    wide = _q(max(min_gap, split_ranges * usual))
    for i, (f, ls) in enumerate(zip(figures, logs)):
        split, low = False, ls[0]
        if len(ls) >= 2:
            # the widest gap (rounded), the first of equals
            k, q_gap = 0, _q(ls[1] - ls[0])
            for j in range(1, len(ls) - 1):
                q_j = _q(ls[j + 1] - ls[j])
                if q_j > q_gap:
                    k, q_gap = j, q_j
            inner = max(ls[k] - ls[0], ls[-1] - ls[k + 1])
            split = q_gap >= wide and q_gap > _q(2 * inner)
            low = _median(ls[: k + 1])
        out.append(_Fig(f, _median(ls), split, low, i, ls[-1] - ls[0], tuple(ls)))
    return out


class _Series:
    """One series judged: the baseline, the nodes found one at a time, then the links and the fabric."""

    def __init__(self, name: str, figures: Sequence[Figure], settings: Settings,
                 measures: Mapping[tuple[tuple[str, ...], bool], Sequence[tuple[float, ...]]] | None = None) -> None:
        self.name = name
        #: per pair (nodes, directed), the repeats of each time it was measured: the sweep's, each retest's
        self.measures = measures or {}
        self.settings = settings
        self.min_gap = -math.log(1 - settings.min_drop)
        # the repeats the machine's load explains leave their figures first (:func:`_unloaded`)
        self.time = _unloaded(figures, self.min_gap)
        self.figs = _series_figures(self.time.figures, self.min_gap, settings.split_ranges)
        #: per node, the share of the rounds read without it whose contemporaries dipped (:meth:`_load_chance`)
        self.load_rates: dict[str, float] = {}
        ranges = sorted(f.range for f in self.figs if len(f.figure.repeats) >= 2)
        #: how far one figure's repeats usually spread (log): the measurement's own noise
        self.usual = _median(ranges) if ranges else 0.0
        # the spread of one figure (a median of r repeats) that its repeats alone imply
        noise = sorted(f.range / _D2[min(len(f.logs), 12) - 2] * _MEDIAN_SCALE / math.sqrt(len(f.logs))
                       for f in self.figs if len(f.logs) >= 2)
        self.noise = _median(noise) if noise else 0.0
        # the spread of one repeat that the figures' own repeats imply: a floor under the repeat
        # spread of a small baseline, whose few repeats' MAD is chance
        self.repeat_noise = _range_spread(self.figs)
        self.by_node: dict[str, list[_Fig]] = {}
        for f in self.figs:
            for n in f.figure.nodes:
                self.by_node.setdefault(n, []).append(f)
        floors = sorted(f.floor for f in figures if f.floor is not None)
        self.floor = math.log(_median(floors)) if floors and _median(floors) > 0 else None
        self.retests: list[tuple[str, str, str]] = []
        #: the figures a fabric finding of this series counts (:attr:`Blame.fabric_pairs`)
        self.fabric_pairs: list[tuple[str, str, str]] = []
        #: the nodes the retests are asked about (their helpers are not): :attr:`Blame.suspects`
        self.suspects: set[str] = set()
        #: nodes whose low repeats are not yet beyond chance, but would be with a few more
        self.unsure: set[str] = set()
        self.pool_for: frozenset[str] | None = None
        self.rough_for: frozenset[str] | None = None
        self.rough: tuple[float, float, int, float] | None = None
        self.pool = _Pool([])
        self.repeats_for: frozenset[str] | None = None
        self.repeats: tuple[list[float], float] = ([], 0.0)
        # (node, faulty) -> its leave-one-out median; (without, faulty) -> the baseline: both pure
        # functions of the series' figures, which never change once read, so every later ask (each
        # direction of :meth:`evidence`, each round of :func:`_together`, :meth:`suspect`) reads them
        self.centers: dict[tuple[str, frozenset[str]], float | None] = {}
        self.bases: dict[tuple[tuple[str, ...], frozenset[str]], tuple[float, float, int] | None] = {}
        self.members = frozenset(self.by_node)
        # the pool, the rough baseline and the repeats per faulty set (each a function of the set alone)
        self.pools: dict[frozenset[str], _Pool] = {}
        self.roughs: dict[frozenset[str], tuple[float, float, int, float] | None] = {}
        self.repeat_sets: dict[frozenset[str], tuple[list[float], float]] = {}
        self.evidences: dict[tuple[str, Direction, frozenset[str]], tuple[float, float] | None] = {}
        self.views: dict[tuple[str, frozenset[str]], tuple[list[_Fig], dict[Direction, list[_Fig]]]] = {}

    # -- baselines

    def _clean(self, f: _Fig, faulty: Iterable[str]) -> bool:
        # a set (every caller's) is read as it is: a copy per figure was a tenth of the model's time
        return (faulty if isinstance(faulty, (set, frozenset)) else set(faulty)).isdisjoint(f.figure.nodes)

    def _pool(self, faulty: frozenset[str]) -> _Pool:
        if self.pool_for != faulty:
            # every set read is kept: re-judging a finding asks the set without it, the next pass the whole one
            if faulty not in self.pools:
                self.pools[faulty] = _Pool(sorted(f.y for f in self.figs if faulty.isdisjoint(f.figure.nodes)))
            self.pool = self.pools[faulty]
            self.pool_for = faulty
        return self.pool

    def baseline(self, without: Sequence[str], faulty: frozenset[str]) -> tuple[float, float, int] | None:
        """(median, spread, count) of the figures none of ``without`` nor the faulty nodes is in."""
        key = (tuple(without), faulty)
        if key not in self.bases:
            self.bases[key] = self._baseline_of(self._without(without, faulty))
        return self.bases[key]

    def _without(self, without: Sequence[str], faulty: frozenset[str]) -> list[_Fig]:
        out = set(without) | faulty
        return [f for f in self.figs if out.isdisjoint(f.figure.nodes)]

    def _rough(self, faulty: frozenset[str]) -> tuple[float, float, int, float] | None:
        """The baseline of every figure without the faulty nodes: only to pass over, in a large
        series, the nodes far from any bar (:data:`_ROUGH`); every verdict is on the exact one."""
        if len(self.figs) < _ROUGH_FROM:
            return None
        if self.rough_for != faulty:
            if faulty not in self.roughs:
                kept = self._without([], faulty)
                base = self._baseline_of(kept)
                self.roughs[faulty] = None if base is None else (*base, self._repeat_spread(kept, base[0]))
            self.rough = self.roughs[faulty]
            self.rough_for = faulty
        return self.rough

    def _baseline_of(self, figs: Sequence[_Fig]) -> tuple[float, float, int] | None:
        kept = sorted(f.y for f in figs)
        if len(kept) < self.settings.min_baseline or not self._enough_nodes(figs):
            return None
        center = _median(kept)
        mad = _median(sorted(abs(v - center) for v in kept))
        # A few figures give a MAD of chance (three alike: none); the repeats of every figure of
        # the series say how much one measurement wanders: the least spread believed.
        return center, max(_MAD_SCALE * mad, self.noise, self.settings.min_spread), len(kept)

    def _enough_nodes(self, figs: Sequence[_Fig]) -> bool:
        """As many nodes in ``figs`` as a baseline needs (read until there are)."""
        nodes: set[str] = set()
        for f in figs:
            nodes.update(f.figure.nodes)
            if len(nodes) >= self.settings.min_baseline:
                return True
        return False

    def _quick_center(self, node: str, faulty: frozenset[str]) -> float | None:
        key = (node, faulty)
        if key not in self.centers:
            pool = self._pool(faulty)
            own = [f.y for f in self.by_node.get(node, []) if faulty.isdisjoint(f.figure.nodes)]
            self.centers[key] = pool.median_without(own)
        return self.centers[key]

    # -- one node

    def score(self, node: str, faulty: frozenset[str]) -> _Score | None:
        """Is ``node`` at fault against the baseline without it (and without ``faulty``)?"""
        s = self.settings
        rest = faulty - {node}  # once, not once per figure
        own = [f for f in self.by_node.get(node, []) if rest.isdisjoint(f.figure.nodes)]
        if len(own) < 2:
            return None
        center = self._quick_center(node, faulty - {node})
        if center is None:
            return None
        groups = self._groups(node, own)
        # two levels: repeats far under every healthy repeat, beside repeats at the baseline (a rail
        # that retrains); judged on the series' repeats without the node (:meth:`_levels`)
        rough = self._rough(faulty - {node})
        levels = self._levels(node, own, faulty - {node}, center)
        unstable = False
        if levels is not None:
            if min(levels.chance, levels.hint) <= _SUSPECT_CHANCE:
                self.unsure.add(node)  # more repeats with it would tell (a retest step)
            unstable = levels.chance <= self._unstable_bar()
        low = any(
            (_q(center - _most(g)) >= _q(self.min_gap) or (self.floor is not None and _q(_most(g)) < _q(self.floor) <= _q(center)))
            and (rough is None or _q(self._drop(center, g, rough[1])) >= _q(_ROUGH * self._bar(rough[1], len(g), rough[2])))
            for g in groups.values())
        if not (low or unstable):
            return None
        kept = self._without([node], faulty - {node})
        base = self._baseline_of(kept)
        if base is None:
            return None
        center, spread, count = base
        lowest = min(f.y for f in kept)
        best: tuple[float, Direction, list[_Fig]] | None = None
        for direction, group in groups.items():
            most = _most(group)
            drop = self._drop(center, group, spread)
            bar = self._bar(spread, len(group), count)
            far = _q(center - most) >= _q(self.min_gap)
            under = self.floor is not None and _q(most) < _q(self.floor) <= _q(center)
            # against a small baseline, under its lowest figure too (a node 11% under 212 and 213
            # but above 182 was "9 spreads" under a MAD of 0.7%)
            beneath = count >= _SMALL_BASELINE or _q(most) < _q(lowest)
            if (far or under) and beneath and _q(drop) >= _q(bar):
                z = drop / bar
                if best is None or _q(z) > _q(best[0]):
                    best = (z, direction, group)
        # two levels inside figures (repeats low and high in one figure: a rail that retrains) are
        # unstable even where most figures are low; low and high only across figures may be a
        # direction (asymmetric): a node fault where the figures say one
        if unstable and levels is not None and (best is None or (levels.mixed >= 2 and 2 * levels.mixed >= len(levels.split))):
            split = levels.split
            text = (f"{len(split)} of its {len(own)} figures with repeats at or under {_fmt(math.exp(levels.cut))} (as low as "
                    f"{_fmt(math.exp(min(f.logs[0] for f in split)))}; {levels.lows} of its {levels.repeats} repeats "
                    f"{s.min_drop * 100:.0f}% or more under) and others at "
                    f"{_fmt(math.exp(center))}, the median of the figures without {node}: {levels.share * 100:.2g}% of the "
                    f"baseline's figures reach that low, a chance of {levels.chance:.1g} for as many: two levels, a rail or "
                    f"link of {node} that retrains (unstable)")
            # ranked above every node fault, the clearest (least likely by chance) first
            return _Score(node, "unstable", 1000.0 - math.log10(max(levels.chance, 1e-300)), None, text,
                          tuple(sorted({n for f in split for n in f.figure.nodes if n != node})))
        if best is None:
            return self._apart(node, groups, kept, center, spread, count)
        z, direction, group = best
        if direction == "both":
            direction = self._direction(groups, center, spread)
        most = _most(group)
        where = {"both": "in both directions", "send": "when it sends", "receive": "when it receives"}[direction]
        text = (f"{_rank(len(group)) + 1} of its {len(group)} figures at or below {_fmt(math.exp(most))}, against "
                f"{_fmt(math.exp(center))}, the median of the {self._count_without(node, faulty)} figures without {node} "
                f"({(1 - math.exp(most - center)) * 100:.0f}% below, {(center - most) / spread:.1f} spreads): "
                f"a node fault {where}")
        return _Score(node, "node fault", z, direction, text, tuple(sorted({n for f in group for n in f.figure.nodes if n != node})))

    def _apart(self, node: str, groups: Mapping[Direction, list[_Fig]], kept: Sequence[_Fig], center: float,
               spread: float, count: int) -> _Score | None:
        """Every figure of ``node`` (in one direction) under every figure without it and, its lowest figure
        left out (a link), the rest with two peers or more, their median 10% under and their repeats
        under the others' beyond chance: the node, in a
        small series whose baseline is too few figures for :meth:`score`'s bar (four NCCL nodes: three
        figures with the node against three without, 62% below, "4.2 spreads" against a bar of 6.5).
        The chance is the rank-sum's (Mann-Whitney, normal tail) of its a repeats among the others' b,
        times the nodes tried; it must be no likelier than :attr:`Settings.unstable_chance`. On the
        benchmark's healthy noise (a quarter of it per pair, shared by the pair's repeats) the least
        chance of 20,000 four- to eight-node series was 3e-6."""
        if len(self.figs) >= _ROUGH_FROM or len(kept) < self.settings.min_baseline:
            return None
        lowest = min(f.y for f in kept)
        theirs = sorted(v for f in kept for v in f.logs)
        for direction, group in groups.items():
            # its lowest figure left out: one bad link (89% down, every repeat the lowest) is not a node
            rest = sorted(group, key=lambda f: (_q(f.y), f.index))[1:]
            peers = {n for f in rest for n in f.figure.nodes if n != node}
            if len(peers) < 2 or _q(max(f.y for f in group)) >= _q(lowest):
                continue
            if _q(center - _median(sorted(f.y for f in rest))) < _q(self.min_gap):
                continue
            mine = [v for f in rest for v in f.logs]
            a, b = len(mine), len(theirs)
            # the pairs (mine, theirs) with mine the higher, ties half
            above = sum(bisect_left(theirs, v - _EPS) + 0.5 * (bisect_right(theirs, v + _EPS) - bisect_left(theirs, v - _EPS))
                        for v in mine)
            z = (a * b / 2 - above) / math.sqrt(a * b * (a + b + 1) / 12)
            chance = len(self.by_node) * (1 - NormalDist().cdf(z))
            if _q(chance) > _q(self.settings.unstable_chance):
                if _q(chance) <= _q(_SUSPECT_CHANCE):
                    self.unsure.add(node)  # more repeats would tell (nine against nine cannot: 7e-4 at best)
                continue
            if direction == "both":
                direction = self._direction(groups, center, spread)
            where = {"both": "in both directions", "send": "when it sends", "receive": "when it receives"}[direction]
            text = (f"all {len(group)} of its figures at or under {_fmt(math.exp(max(f.y for f in group)))}, under all "
                    f"{count} figures without {node} (from {_fmt(math.exp(lowest))}; their median {_fmt(math.exp(center))}), "
                    f"its {a} repeats under their {b} by a chance of {chance:.1g} were it healthy: a node fault {where}")
            drop = self._drop(center, group, spread)
            return _Score(node, "node fault", drop / self._bar(spread, len(group), count), direction, text, tuple(sorted(peers)))
        return None

    def _repeats(self, faulty: frozenset[str]) -> tuple[list[float], float]:
        """The lowest repeat of every figure of the series without the faulty nodes, sorted; the
        repeats' spread around the median figure (cached per faulty set: a large series reads them
        for each node)."""
        if self.repeats_for != faulty:
            if faulty not in self.repeat_sets:
                kept = self._without([], faulty)
                center = _median(sorted(f.y for f in kept)) if kept else 0.0
                self.repeat_sets[faulty] = (sorted(f.logs[0] for f in kept), self._repeat_spread(kept, center))
            self.repeats = self.repeat_sets[faulty]
            self.repeats_for = faulty
        return self.repeats

    def _levels(self, node: str, own: Sequence[_Fig], faulty: frozenset[str], center: float,
                skip: frozenset[int] = frozenset()) -> _Levels | None:
        """Are ``node``'s repeats on two levels: some far under the baseline, in figures with two peers
        or more, beside others at the baseline inside one figure? The low level is each of its low
        repeats in turn; for each, the chance that as many of its figures reach that low by chance,
        each with the chance a healthy figure has: the share of the baseline's figures whose lowest
        repeat is that low, never under a normal tail at that depth (in the baseline's repeat
        spread, widened by 1 + 1/m for a spread read from m figures: a few figures' spread is
        itself uncertain; in a small series read from the figures without the node alone, and the
        tail Student's, :func:`_t_tail`). Figures, not repeats, are counted: a figure's repeats share its path, so
        one bad path's repeats are not as many chances. The lowest chance, times the number of
        levels tried (each is a test), is the node's."""
        s = self.settings
        cut = _q(center - self.min_gap)
        own_mins = sorted(f.logs[0] for f in own)
        # a figure joins the low level at its lowest repeat: for k figures low, the lowest level
        # that holds them is the k-th lowest figure minimum (a higher one is only likelier by chance)
        candidates = sorted({v for v in own_mins[1:] if _q(v) < cut})
        if not candidates:
            return None
        mine = sorted(v for f in own for v in f.logs)
        # its low repeats: every one far under the baseline (a level is not one value: the low
        # level's repeats spread above the lowest figure's minimum too). The same for every level
        # tried: too few of them and no level is tried (nor a hint read), so the test ends here,
        # before the baseline's repeats are read (most nodes of a noisy series end here)
        lows = bisect_right(mine, cut + _EPS)
        if _q(lows / len(mine)) < _q(s.unstable_share):
            return None
        mins, spread_all = self._repeats(faulty)
        if skip:  # figures known bad (other links) are no healthy figure's chance
            kept = [f for f in self._without([], faulty) if f.index not in skip]
            mins = sorted(f.logs[0] for f in kept)
            spread_all = self._repeat_spread(kept, _median(sorted(f.y for f in kept)) if kept else 0.0)
        m = len(mins) - len(own)
        if m < s.min_baseline:
            return None
        repeat_noise = self.repeat_noise
        dof: int | None = None
        if len(mins) < _ROUGH_FROM:  # a small series: the repeats' spread without the node exactly
            others = [f for f in self._without([node], faulty) if f.index not in skip]
            spread_all = self._repeat_spread(others, center)
            # and the ranges' floor without its own figures that jump between two levels: in a
            # 4-node series a flapping node is in 5 of 8 figures, and their two-level ranges
            # would make the floor theirs
            repeat_noise = _range_spread(others)
            dof = sum(len(f.logs) - 1 for f in others) // 2
        # never under what the figures' own repeats imply: a few repeats' MAD is chance (the
        # median over the series, a floor, not a reading)
        sigma = max(spread_all, repeat_noise, s.min_spread) * (1 + 1 / m)
        # a figure measured again has more repeats, so more chances to reach low: each counts as the longest
        per_figure = max(len(f.logs) for f in own)
        load = self._load_chance(node, own)
        # at the healthy level: within one repeat spread of the baseline (and 10% at least)
        high = center - max(self.min_gap, sigma)
        best: _Levels | None = None
        tried = 0
        hint = 1.0
        # each figure's lowest repeat and whether its highest is at the healthy level, rounded once
        # (not once per level tried: the same numbers for every level)
        own_lows = [_q(f.logs[0]) for f in own]
        q_high = _q(high)
        own_high = [_q(f.logs[-1]) >= q_high for f in own]
        normal_dist = NormalDist()
        # the levels tried rise, so each level's figures (its split) are the last level's and those
        # that join it: the figures taken in the order they join, once (not all of them per level)
        order = sorted(range(len(own)), key=lambda i: own_lows[i])
        joined = mixed = 0
        peers: set[str] = set()
        for t in candidates:
            q_t = _q(t)
            while joined < len(order) and own_lows[order[joined]] <= q_t:
                peers.update(n for n in own[order[joined]].figure.nodes if n != node)
                mixed += own_high[order[joined]]
                joined += 1
            if joined < 2:
                continue
            # with two peers at least: one bad path measured both ways (or again) is one peer's link
            if len(peers) < 2:
                continue
            # both levels inside a figure (``mixed``); against a small baseline (whose chance is rough)
            # inside two: one such figure beside a bad link is chance there
            if mixed < 1:
                continue
            below = bisect_right(mins, t + _EPS) - bisect_right(own_mins, t + _EPS)
            normal = normal_dist.cdf((t - center) / sigma)
            hinted = max(below / m, 1 - (1 - normal) ** per_figure)
            tail = _tail(joined, len(own), hinted)
            hint = min(hint, tail)
            if mixed < (2 if m < _SMALL_BASELINE else 1):
                continue
            tried += 1
            one = normal if dof is None else _t_tail((center - t) / sigma, dof)
            share = max(below / m, 1 - (1 - one) ** per_figure, load)
            # a large series' tail is the normal one: the same share, the same chance as the hint's
            chance = tail if share == hinted else _tail(joined, len(own), share)
            # on a log scale: chances far under one in a million must still be told apart
            if best is None or _q(math.log(max(chance, 1e-300))) < _q(math.log(max(best.chance, 1e-300))):
                split = [f for f, low in zip(own, own_lows) if low <= q_t]
                best = _Levels(chance, split, lows, len(mine), t, mixed, share)
        if best is None:
            return None if hint > _SUSPECT_CHANCE else _Levels(1.0, [], 0, len(mine), cut, 0, 1.0, hint)
        return _Levels(min(1.0, best.chance * tried), best.split, best.lows, best.repeats, best.cut, best.mixed, best.share,
                       min(1.0, hint * tried))

    def _load_chance(self, node: str, own: Sequence[_Fig]) -> float:
        """The chance that load dipped one of ``node``'s figures where no contemporary could tell
        (:func:`_unloaded`): its repeats in rounds measured alone (a retest round of one suspect's pairs)
        are as likely dipped as the rounds that were read show the machine's moments to be: the share of
        the rounds of two figures or more (a round of one reads its own dip, not the moment's) whose
        readings by figures without the node (its own faults are no load) dipped beyond the load bar, their
        median, for as many such repeats as its figure with the most. 0 without round labels, or where
        every round was read."""
        unread = max((self.time.unread_of(f.index) for f in own), default=0)
        if not unread:
            return 0.0
        if node not in self.load_rates:
            read = dipped = 0
            for r in self.time.rounds.values():
                theirs = sorted(d for j, d in r.readings.items() if node not in self.time.figures[j].nodes)
                # a round of one figure reads its own dip, not the moment's: two measured at once at least
                if theirs and len(r.readings) >= 2:
                    read += 1
                    dipped += _q(_median(theirs)) >= _q(self.time.bar)
            self.load_rates[node] = dipped / read if read else 0.0
        return 1 - (1 - self.load_rates[node]) ** unread

    def _unstable_bar(self) -> float:
        """The chance under which a node's two levels are beyond chance in this series (:data:`_UNSTABLE_NODES`)."""
        return self.settings.unstable_chance * max(1.0, _UNSTABLE_NODES / max(len(self.by_node), 1))

    @staticmethod
    def _repeat_spread(figs: Sequence[_Fig], center: float) -> float:
        devs = sorted(abs(v - center) for f in figs for v in f.logs)
        return _MAD_SCALE * _median(devs) if devs else 0.0

    def _bar(self, spread: float, k: int, m: int) -> float:
        """How far below the baseline k figures must lie: ``confidence`` of their own spreads (the
        spread of a median of k against a median of m), never under ``least_spreads`` figure spreads."""
        s = self.settings
        # a spread from m figures is itself uncertain (:func:`_unsure`)
        return spread * _unsure(m) * max(s.confidence * math.sqrt(_RANK_SCALE**2 / k + _MEDIAN_SCALE**2 / m), s.least_spreads)

    def _drop(self, center: float, group: Sequence[_Fig], spread: float) -> float:
        """How far the node's figure (:func:`_most`) lies below where a healthy node's would."""
        return center + _expected(len(group)) * spread - _most(group)

    @staticmethod
    def _groups(node: str, own: Sequence[_Fig]) -> dict[Direction, list[_Fig]]:
        """The node's figures all together, as sender and as receiver (two at least each)."""
        out: dict[Direction, list[_Fig]] = {"both": list(own)}
        roles: tuple[tuple[Direction, int], ...] = (("send", 0), ("receive", 1))
        for direction, i in roles:
            group = [f for f in own if f.figure.directed and f.figure.nodes[i] == node]
            if len(group) >= 2:
                out[direction] = group
        return out

    def _direction(self, groups: Mapping[Direction, list[_Fig]], center: float, spread: float) -> Direction:
        sides: dict[str, bool] = {}
        sides_of: tuple[Direction, Direction] = ("send", "receive")
        for name in sides_of:
            group = groups.get(name)
            if group:
                sides[name] = _q(center - _most(group)) >= _q(max(self.min_gap, self.settings.least_spreads * spread / 2))
        if sides.get("send") and not sides.get("receive", True):
            return "send"
        if sides.get("receive") and not sides.get("send", True):
            return "receive"
        return "both"

    def _count_without(self, node: str, faulty: frozenset[str]) -> int:
        out = faulty | {node}
        return sum(1 for f in self.figs if not set(f.figure.nodes) & out)

    # -- the whole series

    def judge(self, nodes: Sequence[str]) -> tuple[dict[str, Finding], list[LinkFault], list[str]]:
        """The nodes at fault in this series alone, then the links and the fabric."""
        return self.finish(nodes, self.find(nodes), frozenset())

    def find(self, nodes: Sequence[str], prior: frozenset[str] = frozenset()) -> dict[str, _Score]:
        """The nodes at fault in this series, one at a time, the clearest first; ``prior`` (slow hosts
        found in other series) left out of every other node's baseline and figures from the start."""
        found: dict[str, _Score] = {}
        for _ in range(4 * len(nodes) + 4):  # bounded: each pass adds or removes a node
            faulty = frozenset(found) | prior
            scores = [sc for n in nodes if n not in found and (sc := self.score(n, faulty)) is not None]
            if scores:
                top = max(scores, key=lambda sc: (_q(sc.strength), _neg(sc.node)))
                found[top.node] = top
                continue
            # each finding again, against the baseline without every other finding
            dropped = False
            for n in sorted(found):
                again = self.score(n, (frozenset(found) | prior) - {n})
                if again is None:
                    del found[n]
                    dropped = True
                    break
                found[n] = again
            if not dropped:
                break
        return found

    def finish(self, nodes: Sequence[str], found: Mapping[str, _Score],
               elsewhere: frozenset[str]) -> tuple[dict[str, Finding], list[LinkFault], list[str]]:
        """Retests for the suspects, then the links and the fabric without the nodes at fault: those
        found here and ``elsewhere`` (at fault over every series together, :func:`_together`)."""
        faulty = frozenset(found) | (elsewhere & set(nodes))
        for n in nodes:
            if n not in faulty and (n in self.unsure or self.suspect(n, faulty)):
                self.suspects.add(n)
                self.retests.extend(self._with_helpers(n, [m for m in nodes if m not in faulty and m != n], nodes))
        findings = {n: Finding(self.name, sc.kind, sc.text, sc.direction, sc.peers) for n, sc in found.items()}
        links, fabric = self._links(nodes, faulty, findings)
        # a small series' baseline is a few figures whose spread is chance: any doubt in it (a
        # retest, a link, repeats on two levels) measures every pair of it again, the baseline's
        # too, so that every figure rests on twice the repeats, and the other way (a 4-node series: its
        # 6 pairs both ways, 12 measurements)
        if len(nodes) <= _REMEASURE_UP_TO and (self.retests or links or found or any(f.split for f in self.figs)):
            self.suspects.update(found, (n for lf in links for n in lf.nodes),
                                 (n for f in self.figs if f.split for n in f.figure.nodes))
            self.retests.extend((self.name, *f.figure.nodes) for f in self.figs if len(f.figure.nodes) == 2)
            self.retests.extend(self._reversed())
        return findings, links, fabric

    def _reversed(self) -> list[tuple[str, str, str]]:
        """Every directed pair of the series the other way, where the sweep measured it one way only: a
        small series measured whole again gives each node a figure with every peer in each role, so
        that a short figure's ends have others in its role to tell node from link by (a 4-node sweep,
        one direction a pair, leaves a sender with two receivers, one of whom receives from it alone)."""
        have = {f.figure.nodes for f in self.figs if f.figure.directed and len(f.figure.nodes) == 2}
        return [(self.name, b, a) for a, b in sorted(have) if (b, a) not in have]

    def evidence(self, node: str, direction: Direction, faulty: frozenset[str]) -> tuple[float, float] | None:
        """How far ``node``'s figures in ``direction`` lie under its baseline: (in their own spreads,
        as the bar of :meth:`_bar` counts them; in log), or None without two figures or a baseline.
        In a large series the spread of every figure without the faulty nodes (one node moves a
        large MAD little)."""
        # a faulty node outside this series takes no figure from it: the same evidence, read once
        # (each round of :func:`_together` asks every node again, with one more faulty node)
        key = (node, direction, (faulty - {node}) & self.members)
        if key not in self.evidences:
            self.evidences[key] = self._evidence(node, direction, key[2])
        return self.evidences[key]

    def _evidence(self, node: str, direction: Direction, faulty: frozenset[str]) -> tuple[float, float] | None:
        # the node's figures and their groups once for its three directions
        if (node, faulty) not in self.views:
            own = [f for f in self.by_node.get(node, []) if faulty.isdisjoint(f.figure.nodes)]
            self.views[node, faulty] = (own, self._groups(node, own))
        own, groups = self.views[node, faulty]
        group = groups.get(direction)
        if not group or len(own) < 2:
            return None
        rough = self._rough(faulty - {node})
        if rough is not None:
            center = self._quick_center(node, faulty - {node})
            if center is None:
                return None
            spread, count = rough[1], rough[2]
        else:
            base = self.baseline([node], faulty - {node})
            if base is None:
                return None
            center, spread, count = base
        own_spread = spread * _unsure(count) * math.sqrt(_RANK_SCALE**2 / len(group) + _MEDIAN_SCALE**2 / count)
        return self._drop(center, group, spread) / own_spread, center - _most(group)

    def suspect(self, node: str, faulty: frozenset[str]) -> bool:
        """Short, but not by enough figures to tell: more figures with it would tell."""
        own = [f for f in self.by_node.get(node, []) if faulty.isdisjoint(f.figure.nodes)]
        center = self._quick_center(node, faulty)
        if not own or center is None:
            return False
        groups = self._groups(node, own)
        short = [g for g in groups.values() if _q(center - _most(g)) >= _q(self.min_gap)]
        if not short:
            return False
        rough = self._rough(faulty)
        if rough is not None and not any(
                _q(self._drop(center, g, rough[1])) >= _q(_ROUGH * self._bar(rough[1], len(g), rough[2]) / 2) for g in short):
            return False
        base = self.baseline([node], faulty)
        if base is None:
            return False
        center, spread, count = base
        return any(_q(self._drop(center, g, spread)) >= _q(self._bar(spread, len(g), count) / 2) for g in short)

    def _with_helpers(self, node: str, helpers: Sequence[str], nodes: Sequence[str]) -> list[tuple[str, str, str]]:
        """``node`` measured with helpers, sending and receiving (the helpers spread by its place)."""
        if not helpers:
            return []
        start = nodes.index(node) % len(helpers)
        chosen = (list(helpers[start:]) + list(helpers[:start]))[: self.settings.helpers]
        directed = any(f.figure.directed for f in self.by_node.get(node, []))
        out = []
        for h in chosen:
            out.append((self.name, node, h))
            if directed:
                out.append((self.name, h, node))
        return out

    def _good_elsewhere(self, f: _Fig, end: str, role: int, faulty: frozenset[str], center: float,
                        spread: float) -> bool:
        """Does ``end`` have another figure, in the same role, that is not short? Short as the series'
        own noise judges it: on a fabric whose healthy figures wander 2x, a helper 20% under the median
        is as good as any (10% alone made every noisy end "short elsewhere": cannot tell, naming no one)."""
        others = [g for g in self.by_node.get(end, []) if g is not f and self._clean(g, faulty)
                  and (not g.figure.directed or not f.figure.directed or g.figure.nodes[role] == end)]
        return any(self._at_level(g.y, center, spread) for g in others)

    def _at_level(self, y: float, center: float, spread: float) -> bool:
        """Is a figure (log) good: within ``least_spreads`` of the series' spreads of ``center`` (or ``min_drop``),
        and not under the floor?"""
        reach = max(self.min_gap, self.settings.least_spreads * spread)
        return _q(center - y) < _q(reach) and not (self.floor is not None and _q(y) < _q(self.floor))

    def _again(self, f: _Fig) -> float | None:
        """The level of ``f``'s pair measured again: the median (log) of its repeats outside its lowest
        measurement, or None when it was measured once. The sweep measures a pair once, beside the other
        pairs of its round, and a retest measures it alone; the order of the figures is no evidence of
        which came first (the same figures give the same verdict in any order), so the lowest is the one
        a moment may explain and the others say what the pair is. Raw repeats: a moment of load the
        round labels explain (:func:`_unloaded`) has already left ``f`` itself."""
        parts = self.measures.get((f.figure.nodes, f.figure.directed), ())
        if len(parts) < 2:
            return None
        logs = sorted((_q(_median(ls)), ls) for ls in (sorted(math.log(max(r, 1e-300)) for r in p) for p in parts if p))
        rest = sorted(v for _, ls in logs[1:] for v in ls)
        return _median(rest) if rest else None

    def _one_offs(self, suspects: Sequence[tuple[_Fig, str]], center: float,
                  spreads: Mapping[int, float]) -> tuple[list[tuple[_Fig, str]], list[_Fig]]:
        """The short figures a fabric finding would count, less those whose pair measured again is good
        (:meth:`_at_level`, as an end good with its other peers is): a one-off of the sweep's moment (a few
        seconds of load on the machine dip a healthy pair beside two slow cables, and 3 of 15 figures
        called the fabric), counted neither for the fabric nor as a link. A pair short again alone keeps
        counting: a spine too oversubscribed for it, a cable."""
        kept: list[tuple[_Fig, str]] = []
        one_offs: list[_Fig] = []
        for f, text in suspects:
            level = self._again(f)
            if level is not None and self._at_level(level, center, spreads.get(f.index, 0.0)):
                one_offs.append(f)
            else:
                kept.append((f, text))
        return kept, one_offs

    def _retests(self, f: _Fig, helpers: Sequence[str], nodes: Sequence[str]) -> list[tuple[str, str, str]]:
        """The measurements that would tell node from link for ``f``: each end with helpers, in its role."""
        out: list[tuple[str, str, str]] = []
        for role, end in enumerate(f.figure.nodes):
            pool = [h for h in helpers if h not in f.figure.nodes]
            if not pool:
                continue
            start = nodes.index(end) % len(pool)
            for h in (pool[start:] + pool[:start])[: self.settings.helpers]:
                if not f.figure.directed:
                    out.append((self.name, end, h))
                else:
                    out.append((self.name, end, h) if role == 0 else (self.name, h, end))
        return out

    def _ports(self, links: list[LinkFault], findings: dict[str, Finding], faulty: frozenset[str]) -> list[LinkFault]:
        """A node at one end of bad links to two peers or more whose repeats there are on two levels (low and
        at the baseline inside one figure) is the common part: its rail retraining, unstable; bad
        paths with steady figures stay links (ECMP routes through the spine differ per pair). So is
        the end of one such link that is low with its other peers too (:meth:`_flapping_end`)."""
        ends: dict[str, list[LinkFault]] = {}
        for link in links:
            for end in link.nodes:
                ends.setdefault(end, []).append(link)
        ports: list[str] = []
        for node in sorted(n for n, found in ends.items() if len({m for lf in found for m in lf.nodes} - {n}) >= 2):
            mine = ends[node]
            figs = [f for f in self.by_node.get(node, []) if any(f.figure.nodes == lf.nodes for lf in mine)]
            center = self._quick_center(node, faulty) or 0.0
            mixed = sum(1 for f in figs if _q(f.logs[-1]) >= _q(center - self.min_gap / 2))
            if mixed < 2:
                continue
            ports.append(node)
            peers = tuple(sorted({n for lf in mine for n in lf.nodes if n != node}))
            findings[node] = Finding(
                self.name, "unstable",
                f"bad with {len(mine)} peers ({', '.join(peers)}) that are good elsewhere, its repeats with them on two "
                f"levels: the common part is {node}'s rail, which retrains (unstable); " + "; ".join(lf.text for lf in mine),
                None, peers)
        for link in links:
            rail = self._flapping_end(link, faulty, links)
            if rail is None or rail in ports:
                continue
            ports.append(rail)
            peer = next(n for n in link.nodes if n != rail)
            findings[rail] = Finding(
                self.name, "unstable",
                f"bad with {peer}, its repeats there on two levels, and its figures with its other peers low on the same "
                f"level beside high ones ({peer}'s are not): {rail}'s rail, which retrains (unstable), not the cable; "
                + link.text, None, (peer,))
        if not ports:
            return links
        kept = [lf for lf in links if not set(lf.nodes) & set(ports)]
        for node in {n for lf in links if set(lf.nodes) & set(ports) for n in lf.nodes} - set(ports):
            if findings.get(node) is not None and findings[node].kind == "link fault" and not any(node in lf.nodes for lf in kept):
                del findings[node]  # its only bad links were with a node found at fault
        return kept

    def _flapping_end(self, link: LinkFault, faulty: frozenset[str], others: Sequence[LinkFault]) -> str | None:
        """The end of one bad link that is a retraining rail: the link's own repeats on two levels (low
        and at the baseline: a bad cable is steadily low), and that end's figures with its other peers
        reaching as low beside high repeats, less likely by chance than :data:`_LINK_END_CHANCE`
        (:meth:`_levels`, without the other bad links' figures), while the other end's do not."""
        fig = next((f for f in self.figs if f.figure.nodes == link.nodes), None)
        if fig is None or len(link.nodes) != 2:
            return None
        bad = {lf.nodes for lf in others if lf is not link}
        chances: dict[str, float] = {}
        for end in link.nodes:
            peer = next(n for n in link.nodes if n != end)
            center = self._quick_center(end, faulty)
            if center is None:
                return None
            if end == link.nodes[0] and _q(fig.logs[-1]) < _q(center - self.min_gap / 2):
                return None  # steadily low: the cable
            own = [f for f in self.by_node.get(end, []) if self._clean(f, faulty) and peer not in f.figure.nodes]
            skip = frozenset(f.index for f in self.figs if f.figure.nodes in bad and f not in own)
            levels = self._levels(end, own, faulty, center, skip) if len(own) >= 2 else None
            chances[end] = levels.chance if levels is not None and levels.split else 1.0
        ends = [n for n in link.nodes if chances[n] <= _LINK_END_CHANCE]
        return ends[0] if len(ends) == 1 else None

    def _common(self, f: _Fig, patterned: Sequence[tuple[_Fig, str]], faulty: frozenset[str], center: float,
                spreads: Mapping[int, float], findings: dict[str, Finding]) -> bool:
        """Is ``f`` explained by one of its ends: every figure of that end in its role short (two peers
        or more, :meth:`_links`' link bar each), and every peer good with others in its own role? Then
        that end is a node fault (found here, in ``findings``): what a pair's figures say when one node
        is in all the short ones and the rest are at the baseline. The node test of :meth:`score` asks
        the median of its figures to clear a bar high enough for a run's many tests; each figure here
        already cleared the bar that names a cable, and its peers clear it of them."""
        short = [g for g, _ in patterned]
        for role, end in enumerate(f.figure.nodes):
            role = role if f.figure.directed else 0
            mine = [g for g in self.by_node.get(end, []) if self._clean(g, faulty)
                    and (not g.figure.directed or g.figure.nodes[role] == end)]
            if len(mine) < 2 or any(g not in short for g in mine):
                continue
            peers = sorted({n for g in mine for n in g.figure.nodes if n != end})
            if len(peers) < 2 or not all(
                    self._good_elsewhere(g, p, (1 - role) if g.figure.directed else 0, faulty, center, spreads[g.index])
                    for g in mine for p in g.figure.nodes if p != end):
                continue
            prev = findings.get(end)
            if prev is None or prev.kind != "node fault":
                direction, where, figs = _role_words(f, role, end, mine)
                findings[end] = Finding(
                    self.name, "node fault",
                    f"every one of its {len(mine)} figures{where} is short ({figs}; the median of the series "
                    f"{_fmt(math.exp(center))}) while each of its peers is good with others: the common part is "
                    f"{end}, a node fault{where or ' in both directions'}", direction, tuple(peers))
            return True
        return False

    def _rest_under(self, end: str, mine: Sequence[_Fig], rest: Sequence[_Fig], faulty: frozenset[str]) -> float | None:
        """``end``'s figures in one role (``mine``) beside its short ones (the rest): how likely so low a rest
        is were ``end`` healthy (Stouffer: the sum of their spreads under the baseline without it over the
        square root of their count, a normal tail, the spread widened as :func:`_unsure` says). A bad cable
        leaves a node's other figures at the baseline; its own fault leaves them under. The chance if no
        more than :data:`_END_CHANCE` and the median of all its figures in the role ``min_drop`` under the
        baseline; else None (cannot tell)."""
        base = self.baseline([end], faulty)
        if base is None:
            return None
        center, spread, count = base
        if _q(center - _median(sorted(g.y for g in mine))) < _q(self.min_gap):
            return None
        unit = spread * _unsure(count)
        z = sum((center - g.y) / unit for g in rest) / math.sqrt(len(rest))
        chance = 1 - NormalDist().cdf(z)
        return chance if _q(chance) <= _q(_END_CHANCE) else None

    def _one_end(self, f: _Fig, faulty: frozenset[str], center: float, spread: float,
                 findings: dict[str, Finding]) -> bool:
        """Is a short figure one of whose ends is good with its other peers (in its role) and the other not
        explained by that other end: its other figures in its role (two at least) under the baseline
        without it beyond chance (:meth:`_rest_under`)? Then that end is a node fault (found here, in
        ``findings``): a cable would leave its other figures at the baseline, not all of them short."""
        good = [self._good_elsewhere(f, end, role, faulty, center, spread) for role, end in enumerate(f.figure.nodes)]
        if len(good) != 2 or good.count(True) != 1:
            return False
        role = good.index(False)
        end, other = f.figure.nodes[role], f.figure.nodes[1 - role]
        role = role if f.figure.directed else 0
        mine = [g for g in self.by_node.get(end, []) if self._clean(g, faulty)
                and (not g.figure.directed or not f.figure.directed or g.figure.nodes[role] == end)]
        rest = [g for g in mine if g is not f]
        if len(rest) < 2:
            return False
        chance = self._rest_under(end, mine, rest, faulty)
        if chance is None:
            return False
        prev = findings.get(end)
        if prev is None or prev.kind != "node fault":
            direction, where, figs = _role_words(f, role, end, mine)
            findings[end] = Finding(
                self.name, "node fault",
                f"short with {other}, which is good with others, and its other {len(rest)} figures{where} under the "
                f"baseline without {end} by a chance of {chance:.1g} were it healthy ({figs}; the median of the series "
                f"{_fmt(math.exp(center))}): not the cable, {end}, a node fault{where or ' in both directions'}",
                direction, tuple(sorted({n for g in mine for n in g.figure.nodes if n != end})))
        return True

    def _under_both(self, f: _Fig, faulty: frozenset[str], spread: float) -> bool:
        """Is ``f`` at least the link bar (:attr:`Settings.spreads` spreads and ``min_drop``) under the median
        of each end's other figures in its role (one at least each)?"""
        if not spread or len(f.figure.nodes) != 2:
            return False
        reach = max(self.min_gap, self.settings.spreads * spread)
        for role, end in enumerate(f.figure.nodes):
            others = sorted(g.y for g in self.by_node.get(end, []) if g is not f and self._clean(g, faulty)
                            and (not g.figure.directed or not f.figure.directed or g.figure.nodes[role] == end))
            if not others or _q(_median(others) - f.y) < _q(reach):
                return False
        return True

    def _links(self, nodes: Sequence[str], faulty: frozenset[str],
               findings: dict[str, Finding]) -> tuple[list[LinkFault], list[str]]:
        s = self.settings
        pool = self._pool(faulty)
        center_all = _median(pool.values) if pool.values else None
        fabric: list[str] = []
        if center_all is not None and self.floor is not None and _q(center_all) < _q(self.floor):
            fabric.append(f"{self.name}: the median of the {len(pool.values)} figures without a faulty node, "
                          f"{_fmt(math.exp(center_all))}, is under the floor {_fmt(math.exp(self.floor))}: the whole fabric "
                          "(or the profile's floor) falls short, not a node")
            for n in nodes:
                if n not in findings and n in self.by_node:
                    findings[n] = Finding(self.name, "fabric", fabric[-1])
            return [], fabric
        rough = self._rough(faulty)
        suspects: list[tuple[_Fig, str]] = []
        spreads: dict[int, float] = {}  # each suspect's baseline spread, to judge its ends elsewhere
        untold: list[_Fig] = []
        for f in self.figs:
            if not self._clean(f, faulty) or len(f.figure.nodes) != 2 or center_all is None:
                continue
            below_floor = self.floor is not None and _q(f.y) < _q(self.floor)
            if not (below_floor or _q(center_all - f.y) >= _q(self.min_gap)):
                continue
            if not below_floor and rough is not None and _q(center_all - f.y) < _q(_ROUGH * s.spreads * rough[1]):
                continue  # a large series: far from the bar of every figure's baseline (:data:`_ROUGH`)
            # without either end; in a cluster too small for that, every other figure
            base = self.baseline(f.figure.nodes, faulty) or self._baseline_of(
                [g for g in self.figs if g is not f and self._clean(g, faulty)])
            if base is None:
                if below_floor:
                    untold.append(f)
                continue
            center, spread, count = base
            spreads[f.index] = spread
            drop = center - f.y
            bad = _q(drop) >= _q(s.spreads * spread) and (_q(drop) >= _q(self.min_gap) or below_floor)
            if bad:
                a, b = f.figure.nodes
                how = f"{(1 - math.exp(-drop)) * 100:.0f}% below"
                suspects.append((f, f"{a}<->{b}: {_fmt(math.exp(f.y))} against {_fmt(math.exp(center))}, the median of the "
                                    f"{count} other figures ({how}, {drop / spread:.1f} spreads)"))
            elif below_floor:
                a, b = f.figure.nodes
                suspects.append((f, f"{a}<->{b}: {_fmt(math.exp(f.y))}, under the floor {_fmt(math.exp(self.floor or 0.0))} "
                                    f"(the median of the {count} other figures is {_fmt(math.exp(center))})"))
        clean = [f for f in self.figs if self._clean(f, faulty)]
        links: list[LinkFault] = []
        # a figure far under what each of its ends measures with its other peers (in its role) is the
        # path between them, whatever else either end shows: 40 Gb/s where the sender's others are 161
        # and the receiver's 171 (a link 80% down) is a link, not held back by the sender's pattern
        alone = {f.index for f, _ in suspects if self._under_both(f, faulty, spreads[f.index] if f.index in spreads else 0.0)}
        # a node in two short figures (in one role) is a pattern: more figures with it would tell
        seen: dict[tuple[str, int], int] = {}
        for f, _ in suspects:
            for role, n in enumerate(f.figure.nodes):
                key = (n, role if f.figure.directed else 0)
                seen[key] = seen.get(key, 0) + 1
        patterned = [(f, t) for f, t in suspects if f.index not in alone and any(
            seen[(n, role if f.figure.directed else 0)] >= 2 for role, n in enumerate(f.figure.nodes))]
        suspects = [(f, t) for f, t in suspects if (f, t) not in patterned]
        # one node in every short figure of one role, each peer good with others: that node
        untold += [f for f, _ in patterned
                   if center_all is None or not self._common(f, patterned, faulty, center_all, spreads, findings)]
        one_offs: list[_Fig] = []
        fabric_bar = max(2, s.fabric_share * len(clean))  # more short figures than this: the fabric
        if suspects and center_all is not None and len(suspects) > fabric_bar:
            # a pair's figures judged together: the fabric must not rest on one moment of the sweep either
            suspects, one_offs = self._one_offs(suspects, center_all, spreads)
        if suspects and len(suspects) > fabric_bar:
            # measured once: the pair alone, before the finding stands (the run measures it in its next
            # retest step; a pair short again alone, or in its round run again, is the fabric)
            once = [f for f, _ in suspects if self._again(f) is None]
            again = len(suspects) - len(once)
            asked = ", ".join(("->" if f.figure.directed else "<->").join(f.figure.nodes) for f in once)
            text = (f"{self.name}: {len(suspects)} of {len(clean)} figures far below the rest with no node pattern"
                    + (f" ({again} of them short measured again alone too)" if again else "")
                    + f": the fabric (routing, oversubscription, the spine), not {len(suspects)} cables"
                    + (f"; {len(one_offs)} more short once and good measured again alone are a moment's, not counted"
                       if one_offs else "")
                    + (f"; measuring {asked} again alone would tell the fabric from a moment of load in the sweep" if once else ""))
            fabric.append(text)
            self.retests.extend((self.name, f.figure.nodes[0], f.figure.nodes[1]) for f in once)
            self.fabric_pairs.extend((self.name, f.figure.nodes[0], f.figure.nodes[1]) for f, _ in suspects)
            for f, _ in suspects:
                for n in f.figure.nodes:
                    findings.setdefault(n, Finding(self.name, "fabric", text))
            return links, fabric
        for f, text in suspects:
            a, b = f.figure.nodes
            assert center_all is not None  # suspects are only found against it
            spread = spreads[f.index]
            if f.index in alone or (self._good_elsewhere(f, a, 0, faulty, center_all, spread)
                                    and self._good_elsewhere(f, b, 1, faulty, center_all, spread)):
                links.append(LinkFault(self.name, (a, b), f"a link fault: {text}; both ends are good with their other peers"))
                for end, other in ((a, b), (b, a)):
                    prev = findings.get(end)
                    peers = tuple(sorted({*(prev.peers if prev and prev.kind == "link fault" else ()), other}))
                    findings[end] = Finding(self.name, "link fault", f"a link fault with {', '.join(peers)}: {text}", None, peers)
            elif not self._one_end(f, faulty, center_all, spread, findings):
                untold.append(f)
        links = self._ports(links, findings, faulty)
        helpers = [n for n in nodes if n not in findings and n not in faulty]
        for f in untold:
            ends = f.figure.nodes
            retests = [(self.name, *f.figure.nodes)] if len(f.figure.nodes) == 2 else []
            retests += self._retests(f, helpers, nodes)
            self.retests.extend(retests)
            self.suspects.update(f.figure.nodes)
            for end in ends:
                if end not in findings or findings[end].kind == "cannot tell":
                    others = tuple(n for n in ends if n != end)
                    prev = findings.get(end)
                    peers = tuple(sorted({*(prev.peers if prev else ()), *others}))
                    findings[end] = Finding(
                        self.name, "cannot tell",
                        f"{'->'.join(ends) if f.figure.directed else '<->'.join(ends)} is {_fmt(math.exp(f.y))}, short, and "
                        f"neither {end} nor {', '.join(others)} has enough other figures in that direction to tell the node "
                        "from the link; measuring " + (", ".join(f"{x}->{y}" for _, x, y in retests) or "more pairs")
                        + " would tell", None, peers)
        return links, fabric


def _tail(x: int, k: int, p: float) -> float:
    """P(at least x of k), each with chance p."""
    q = 1 - p
    return sum([math.comb(k, i) * p**i * q ** (k - i) for i in range(x, k + 1)])


def _unsure(m: int) -> float:
    """How much wider a spread read from m figures may be than it reads: 1 + 1/m for a baseline
    under :data:`_SMALL_BASELINE` (whose node must lie under all of it too), 1 + 1/sqrt(m) above
    (the MAD of m figures is off by about 1.16/sqrt(m) of itself: 21 figures read a spread of 0.045
    where their noise was 0.06, and a healthy sender 16% under three of four times was sent back)."""
    return 1 + (1 / m if m < _SMALL_BASELINE else 1 / math.sqrt(m))


def _t_tail(z: float, dof: int) -> float:
    """P(T >= z) for Student's t with ``dof`` degrees of freedom: how likely a deviation of z
    spreads is when the spread itself was read from few repeats (a normal tail believes a spread
    of chance). 0.5 x I_x(dof/2, 1/2) with x = dof / (dof + z^2)."""
    if z < 0:
        return 1 - _t_tail(-z, dof)
    return 0.5 * _beta_inc(dof / 2, 0.5, dof / (dof + z * z))


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b), by its continued fraction (Lentz), on the side of
    x where it converges (accurate in the tail, where the chances of :meth:`_Series._levels` are)."""
    if x <= 0 or x >= 1:
        return 0.0 if x <= 0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1 - _beta_inc(b, a, 1 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for k in range(1, 300):
        delta = 1.0
        for num in (k * (b - k) * x / ((a + 2 * k - 1) * (a + 2 * k)),
                    -(a + k) * (a + b + k) * x / ((a + 2 * k) * (a + 2 * k + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            delta = d * c
            h *= delta
        if abs(delta - 1) < 1e-12:
            break
    return front * h


def _role_words(f: _Fig, role: int, end: str, mine: Sequence[_Fig]) -> tuple[Direction, str, str]:
    """How a node fault found from ``end``'s figures in one role reads: its direction, the words for it
    (" when it sends"), and the figures with their peers, in the series' order."""
    direction: Direction = ("send", "receive")[role] if f.figure.directed else "both"
    where = {"both": "", "send": " when it sends", "receive": " when it receives"}[direction]
    figs = ", ".join(f"{_fmt(math.exp(g.y))} with {'/'.join(n for n in g.figure.nodes if n != end)}"
                     for g in sorted(mine, key=lambda g: g.index))
    return direction, where, figs


def _range_spread(figs: Sequence[_Fig]) -> float:
    """The spread of one repeat that figures' own repeats imply: the median of their ranges, each
    in d2 spreads (the mean range of n normal samples)."""
    per_repeat = sorted(f.range / _D2[min(len(f.logs), 12) - 2] for f in figs if len(f.logs) >= 2)
    return _median(per_repeat) if per_repeat else 0.0


def _rank(k: int) -> int:
    """Which of k figures (0: the lowest) a node is judged on: the one two thirds of them are at or
    below (of two or three, the highest): a bad link and a figure low by chance are not a node."""
    return k - 1 - (k - 1) // 3


def _most(group: Sequence[_Fig]) -> float:
    """The value two thirds of the figures are at or below (:func:`_rank`)."""
    return sorted([f.y for f in group])[_rank(len(group))]


def _expected(k: int) -> float:
    """Where that figure of k healthy ones lies, in spreads above their median (Blom's formula)."""
    if k not in _EXPECTED:  # a function of k alone, asked for every node in every round: read once
        _EXPECTED[k] = NormalDist().inv_cdf((_rank(k) + 1 - 0.375) / (k + 0.25))
    return _EXPECTED[k]


_EXPECTED: dict[int, float] = {}


def _neg(name: str) -> tuple[int, ...]:
    """Sorts names backwards inside max(): of two equal scores the first name wins."""
    return tuple(-ord(c) for c in name) + (0,)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# --------------------------------------------------------------------------- every series together


def _together(judged: Mapping[str, _Series], found: Mapping[str, Mapping[str, _Score]],
              settings: Settings) -> dict[str, Finding]:
    """Node faults that no series shows alone but every series together does.

    A slow host or a slow sender shows in TCP and in every rail: a few spreads under in each, the
    bar of one series (high, for the many tests of a run) in none. Each series' evidence (how many
    of its own spreads the node's figures lie under its baseline, at most the bar: one series
    cannot carry the rest) is added over the series where the node has two figures in that
    direction, and held to the same bar in the sum's spread (Stouffer: the sum of k over sqrt k);
    the figures must lie 10% under on average too. Nodes are found one at a time, the clearest
    first, each leaving the baselines of the rest. Series are independent measurements (other
    tools, other ports), but a host that slows every check is one node's fault: the node's.
    """
    s = settings
    min_gap = -math.log(1 - s.min_drop)
    at_fault = {n for f in found.values() for n in f}
    names = sorted({n for series in judged.values() for n in series.by_node} - at_fault)
    out: dict[str, Finding] = {}
    where = {"both": "in both directions", "send": "when it sends", "receive": "when it receives"}
    for _ in range(len(names)):
        best: tuple[float, str, Direction, str] | None = None
        faulty = {name: frozenset(found[name]) | frozenset(out) for name in judged}  # once a round, not per node
        for node in names:
            if node in out:
                continue
            for direction in ("both", "send", "receive"):
                zs: list[float] = []
                drops: list[float] = []
                parts: list[tuple[str, float, float]] = []  # written out only for the best
                for name in sorted(judged):
                    got = judged[name].evidence(node, direction, faulty[name])
                    if got is None:
                        continue
                    z, drop = got
                    zs.append(min(z, s.confidence))
                    drops.append(drop)
                    parts.append((name, z, drop))
                if len(zs) < 2:
                    continue
                total = sum(zs) / math.sqrt(len(zs))
                if _q(total) < _q(s.confidence) or _q(sum(drops) / len(drops)) < _q(min_gap):
                    continue
                if best is None or (_q(total), _neg(node)) > (_q(best[0]), _neg(best[1])):
                    text = (f"under its baseline in every pair check together, {total:.1f} of their spreads "
                            f"(bar {s.confidence:g}): "
                            + ", ".join(f"{name} {(1 - math.exp(-drop)) * 100:.0f}% below ({z:.1f})" for name, z, drop in parts)
                            + f": a node fault {where[direction]}")
                    best = (total, node, direction, text)
        if best is None:
            break
        _, node, direction, text = best
        out[node] = Finding(f"{len(judged)} pair checks together", "node fault", text, direction)
    return out


# --------------------------------------------------------------------------- everything


def blame(
    nodes: Iterable[str],
    figures: Iterable[Figure],
    *,
    failures: Iterable[Failure] = (),
    unreachable: Mapping[str, str] | None = None,
    settings: Settings | None = None,
) -> Blame:
    """Every node's class from every pair check's figures (see the module's docstring).

    ``unreachable``: node -> why it could not be reached; its figures and failures count for
    no one. ``failures``: measurements without a figure, for the unmeasured list and the notes.
    """
    settings = settings or Settings()
    names = sorted(set(nodes))
    unreachable = dict(unreachable or {})
    failures = sorted(failures, key=lambda f: (f.check, f.nodes, f.message, f.charged or ""))
    # a group measured together has no order: one spelling for every measurement of it
    figures = [f if f.directed else replace(f, nodes=tuple(sorted(f.nodes))) for f in figures]
    usable = sorted(
        (f for f in figures if f.repeats and len(set(f.nodes)) == len(f.nodes) >= 2 and not set(f.nodes) & set(unreachable)),
        key=lambda f: (f.series, f.nodes, f.directed, tuple(sorted(f.repeats)), f.floor if f.floor is not None else -1.0,
                       tuple(sorted(zip(f.repeats, f.rounds)))),
    )
    # a pair measured again (a retest) is the same pair with more repeats: judged on all of them, each
    # repeat with its round label (the labels follow the repeats they came with; a part measured at a
    # time not known leaves the whole figure's times unknown)
    merged: dict[tuple[str, tuple[str, ...], bool], Figure] = {}
    #: per series, each time a pair was measured, apart: a fabric finding judges a pair's measurements
    #: together (:meth:`_Series._again`)
    measures: dict[str, dict[tuple[tuple[str, ...], bool], list[tuple[float, ...]]]] = {}
    for f in usable:
        key = (f.series, f.nodes, f.directed)
        measures.setdefault(f.series, {}).setdefault((f.nodes, f.directed), []).append(f.repeats)
        prev = merged.get(key)
        merged[key] = f if prev is None else Figure(
            f.check, f.nodes, prev.repeats + f.repeats, prev.floor if prev.floor is not None else f.floor, f.rail, f.directed,
            prev.rounds + f.rounds if prev.rounds and f.rounds else ())
    series: dict[str, list[Figure]] = {}
    for key in sorted(merged):
        series.setdefault(key[0], []).append(merged[key])

    measured = {n for f in usable for n in f.nodes}
    unmeasured: list[Unmeasured] = []
    for n in names:
        if n in unreachable:
            unmeasured.append(Unmeasured(n, f"could not be reached: {unreachable[n]}",
                                         f"restore access to {n} (SSH, host name, user, key) and run again"))
        elif n not in measured:
            own = [f for f in failures if n in f.nodes and f.charged in (None, n)]
            why = "; ".join(f"{f.check} {'<->'.join(f.nodes)}: {f.message}" for f in own[:2])
            unmeasured.append(Unmeasured(n, f"no measurement with {n} produced a figure" + (f" ({why})" if why else ""),
                                         f"make the pair checks run on {n} (the tools, the ports) and run again"))

    per_node: dict[str, list[Finding]] = {n: [] for n in names if n in measured}
    links: list[LinkFault] = []
    fabric: list[str] = []
    retests: list[tuple[str, str, str]] = []
    fabric_pairs: list[tuple[str, str, str]] = []
    suspects: set[str] = set()
    judged = {name: _Series(name, series[name], settings, measures[name]) for name in sorted(series)}
    members = {name: sorted({n for f in series[name] for n in f.nodes}) for name in judged}
    found = {name: judged[name].find(members[name]) for name in judged}
    # a host slow both ways in one series is found again in the others without its figures in anyone's
    # baseline (eight NCCL nodes: a host 44% slow in every check drags the NCCL-only node's peers down)
    slow = _slow_hosts(found)
    for name in sorted(judged):
        prior = frozenset(n for other in judged if other != name for n in slow[other]) - set(found[name])
        if prior & set(members[name]):
            found[name] = judged[name].find(members[name], prior & set(members[name]))
    together = _together(judged, found, settings) if len(judged) >= 2 else {}
    slow = _slow_hosts(found)
    for name in sorted(judged):
        # a node slow both ways in another series (the host) leaves this one's links and fabric test too:
        # its figures are its own (six NCCL nodes, one slow in every check and one slow in NCCL alone:
        # 9 of the 15 figures theirs, and the median of all of them under the floor called the fabric)
        elsewhere = frozenset(together) | {n for other in judged if other != name for n in slow[other]}
        series_found, series_links, series_fabric = judged[name].finish(members[name], found[name], elsewhere)
        retests += judged[name].retests
        fabric_pairs += judged[name].fabric_pairs
        suspects |= judged[name].suspects
        links += series_links
        fabric += series_fabric
        for n, finding in sorted(series_found.items()):
            per_node[n].append(finding)
    for n, finding in sorted(together.items()):
        per_node[n].append(finding)

    charged_elsewhere: dict[str, int] = {}
    for failure in failures:
        if failure.charged is not None and failure.charged in unreachable:
            continue  # the unreachable peer's, not held against anyone measured
        for n in failure.nodes:
            charged_elsewhere[n] = charged_elsewhere.get(n, 0) + 1

    out: dict[str, NodeBlame] = {}
    for n in sorted(per_node):
        seen = per_node[n]
        errored = charged_elsewhere.get(n, 0)
        note = f"; {errored} measurement(s) with {n} produced no figure and are not counted" if errored else ""
        if not seen:
            out[n] = NodeBlame(n, "healthy", f"{n} is within its peers' spread in every pair check{note}")
            continue
        worst = max(seen, key=lambda f: RANK[f.kind])
        message = " | ".join(f"{f.series}: {f.text}" for f in seen)
        tell = ""
        if worst.kind == "cannot tell":
            tell = (f"measure {n} with at least {settings.min_baseline} more peers (inventory pairs: all, or more nodes), "
                    "so that a baseline without it can be built")
        direction = worst.direction if worst.kind == "node fault" else None
        if worst.kind == "node fault":
            dirs = {f.direction for f in seen if f.kind == "node fault"}
            direction = dirs.pop() if len(dirs) == 1 else "both"
        out[n] = NodeBlame(n, worst.kind, message + note, direction, tuple(seen), tell)
    return Blame(out, tuple(unmeasured), tuple(sorted(links, key=lambda lf: (lf.series, lf.nodes))), tuple(fabric),
                 tuple(sorted(set(retests))), tuple(sorted(set(fabric_pairs))), tuple(sorted(suspects)))


# --------------------------------------------------------------------------- the baseline, for other checks


def _slow_hosts(found: Mapping[str, Mapping[str, _Score]]) -> dict[str, set[str]]:
    """Per series, the nodes found slow both ways there: a host's fault, which every other series sees too."""
    return {name: {n for n, sc in f.items() if sc.kind == "node fault" and sc.direction == "both"} for name, f in found.items()}


def baseline_without(without: Iterable[str], figures: Sequence[Figure],
                     settings: Settings | None = None) -> tuple[float, float, int] | None:
    """The baseline :func:`blame` judges a node (or a pair's two ends) against, for the checks that
    judge a figure against its peers (the outlier checks): over the figures of one series that none
    of ``without`` is in, their median (in the figures' unit), their spread in log (1.4826 x the MAD
    of the figures' logarithms, never under what their own repeats imply nor
    :attr:`Settings.min_spread`: a share, as the model compares ratios) and how many they are. None
    when fewer than :attr:`Settings.min_baseline` figures or nodes remain."""
    return baselines_without([without], figures, settings)[0]


def baselines_without(each: Iterable[Iterable[str]], figures: Sequence[Figure],
                      settings: Settings | None = None) -> list[tuple[float, float, int] | None]:
    """:func:`baseline_without` for every set of nodes in ``each``, the figures read once: a baseline
    per node of a large cluster is n baselines, not n readings of every figure."""
    series = _Series("baseline", figures, settings or Settings())
    out: list[tuple[float, float, int] | None] = []
    for without in each:
        base = series.baseline(sorted(set(without)), frozenset())
        out.append(None if base is None else (math.exp(base[0]), base[1], base[2]))
    return out
