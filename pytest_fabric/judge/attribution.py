"""Attribution: is a bad pair the fault of a node, of the link between two nodes, or of the fabric?

The classes, in the order they are decided:

- **unreachable**: the node could not be reached; its pairs were never measured
  and count for no one (not a node fault, not a fault of its peers).
- **not measured**: every pair of the node errored (a missing tool, a timeout):
  nothing to attribute.
- **fabric-wide shortfall**: (nearly) every measured pair falls short, alone too:
  one finding about the fabric or the profile's floor, stated once, not N node faults.
- **fails under load**: the pair fell short inside its round, passed re-measured
  alone, and fell short again when its round ran again: contention, routing or
  oversubscription of the fabric (static fat-tree routes collide on spine links),
  not a cable.  A pair that passes both alone and in its round again was a
  one-off and is **not reproduced** (counted for no one).
- **node fault**: bad with most measured peers, confirmed by re-measuring the
  node alone against several known-good helpers, in its send and its receive
  direction (a receive-only fault shows only when the node receives).
- **link fault**: one pair bad alone while both ends are good with helpers:
  the cable or switch ports between them.
- **cannot attribute**: bad pairs remain but no node is good with its peers, so
  there is no helper to tell a node from a link.

Only measured pairs count.  The classification here is pure; re-measuring is
done through the callables of :class:`Remeasure`, which take every retest one step of the
rules needs at once (the fabric sample, every bad pair, every suspect with its helpers): the
driver runs them in rounds of disjoint pairs (:mod:`pytest_fabric.run.retests`) and gives back
each pair's figures.  Helpers are spread across the healthy nodes
(:func:`~pytest_fabric.run.retests.spread_helpers`), so no helper is in every retest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_fabric.run.retests import spread_helpers

__all__ = ["Attribution", "FabricAttribution", "NodeAttribution", "PairCheck", "PairsCheck", "Remeasure", "Retest", "attribute", "merge"]

@dataclass(frozen=True)
class Retest:
    """A pair re-measured: good, bad, or None when its repeats fall on both sides of the floor
    (the spread near the floor: cannot tell, and never a cable).  ``figures`` is what was measured,
    for the retest log (``24.1, 25.3, 24.8 Gb/s, median 24.8``)."""

    good: bool | None
    figures: str = ""


#: (sender, receiver) -> the pair re-measured now (a bare bool is a Retest without figures).
#: Both names in the order measured: the sender runs the client.
PairCheck = Callable[[str, str], "Retest | bool"]
#: every (sender, receiver) pair one step of the rules asks for -> each one's retest
PairsCheck = Callable[[list[tuple[str, str]]], Mapping[tuple[str, str], "Retest | bool"]]


def _retest(found: Retest | bool) -> Retest:
    return found if isinstance(found, Retest) else Retest(bool(found))


@dataclass
class Remeasure:
    """How attribution re-measures before blaming: each callable gets every pair of one step at once."""

    #: the pairs alone, none of the sweep running, each in the direction given (the driver may run
    #: disjoint ones together: they share no node)
    alone: PairsCheck
    #: the pairs inside their whole rounds again (the load of the sweep); None: not available
    in_round: PairsCheck | None = None

    @classmethod
    def each(cls, alone: PairCheck, in_round: PairCheck | None = None) -> Remeasure:
        """From callables of one pair (a model fabric): the pairs of a step asked one after another."""

        def every(check: PairCheck) -> PairsCheck:
            return lambda pairs: {pair: check(*pair) for pair in pairs}

        return cls(every(alone), every(in_round) if in_round is not None else None)


@dataclass
class NodeAttribution:
    node: str
    verdict: str  # ok | node fault | link fault | cannot attribute | unreachable | not measured
    bad_peers: list[str] = field(default_factory=list)
    peers: int = 0
    retests: list[str] = field(default_factory=list)
    message: str = ""
    direction: str | None = None  # for a node fault: "send", "receive" or "both"

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "verdict": self.verdict,
            "bad_peers": list(self.bad_peers),
            "peers": self.peers,
            "retests": list(self.retests),
            "direction": self.direction,
            "message": self.message,
        }


@dataclass
class FabricAttribution:
    verdict: str  # ok | fabric-wide shortfall | fails under load | cannot attribute
    message: str
    under_load: list[str] = field(default_factory=list)  # pair ids
    not_reproduced: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "message": self.message,
            "under_load": list(self.under_load),
            "not_reproduced": list(self.not_reproduced),
        }


@dataclass
class Attribution:
    nodes: dict[str, NodeAttribution]
    fabric: FabricAttribution

    def __getitem__(self, node: str) -> NodeAttribution:
        return self.nodes[node]


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def _pid(pair: tuple[str, str]) -> str:
    return f"{pair[0]}<->{pair[1]}"


# How many pairs to re-measure alone before calling a shortfall of (nearly) every
# pair fabric-wide: enough to tell "short alone too" from "short only under load"
# without re-measuring the whole cluster one pair at a time.
FABRIC_SAMPLE = 3


def attribute(
    nodes: Iterable[str],
    measured: Iterable[tuple[str, str]],
    bad: Iterable[tuple[str, str]],
    *,
    unreachable: Mapping[str, str] | None = None,
    errored: Mapping[str, list[str]] | None = None,
    node_fault_share: float = 0.5,
    fabric_share: float = 0.9,
    remeasure: Remeasure | None = None,
    helpers: int = 2,
    what: str = "bandwidth",
) -> Attribution:
    """Classify every node, and the fabric, from the measured pairs and the bad ones among them.

    ``measured`` holds (sender, receiver) pairs that produced a number; pairs
    that errored are left out (``errored`` maps a node to what errored for it,
    for the message).  ``bad`` is the subset that failed in its round.
    """
    names = list(nodes)
    unreachable = dict(unreachable or {})
    errored = {n: list(v) for n, v in (errored or {}).items()}
    direction_of: dict[frozenset[str], tuple[str, str]] = {}
    for a, b in measured:
        if a != b:
            direction_of[_key(a, b)] = (a, b)
    measured_set = set(direction_of)
    bad_set = {_key(a, b) for a, b in bad if a != b} & measured_set
    peers = {n: sorted(next(iter(p - {n})) for p in measured_set if n in p) for n in names}
    round_bad = {n: sorted(next(iter(p - {n})) for p in bad_set if n in p) for n in names}
    retests: dict[str, list[str]] = {n: [] for n in names}
    out: dict[str, NodeAttribution] = {}

    def log(pair: tuple[str, str], found: Retest | bool, how: str) -> bool | None:
        result = _retest(found)
        word = {True: "good", False: "bad", None: "cannot tell"}[result.good]
        figures = f": {result.figures}" if result.figures else ""
        near = " (its repeats fall on both sides of the floor)" if result.good is None else ""
        text = f"{pair[0]}->{pair[1]} {word} {how}{figures}{near}"
        for end in pair:
            if end in retests:
                retests[end].append(text)
        return result.good

    known: dict[tuple[str, tuple[str, str]], bool | None] = {}

    def ask(pairs: Sequence[tuple[str, str]], how: str = "alone") -> dict[tuple[str, str], bool | None]:
        """Every pair of one step re-measured at once (a pair asked before is not measured again)."""
        assert remeasure is not None
        check = remeasure.alone if how == "alone" else remeasure.in_round
        todo = [p for p in dict.fromkeys(pairs) if (how, p) not in known]
        if todo and check is not None:
            found = check(todo)
            for pair in todo:
                known[(how, pair)] = log(pair, found[pair], how)
        return {p: known.get((how, p), False) for p in pairs}

    # Nodes without a single measured pair: say why, and count them for no one.
    for n in names:
        if n in unreachable:
            out[n] = NodeAttribution(
                n,
                "unreachable",
                message=(
                    f"{n} is unreachable ({unreachable[n]}); its pairs were not measured and count for no one: "
                    f"not a node fault, and not held against its peers. Fix access to {n} and run again."
                ),
            )
        elif not peers[n]:
            why = "; ".join(errored.get(n, [])[:2]) or "it has no pair in the schedule"
            out[n] = NodeAttribution(
                n, "not measured", message=f"no pair with {n} was measured ({why}), so there is nothing to attribute"
            )

    def uncounted(n: str) -> str:
        count = len(errored.get(n, []))
        return f"; {count} pair(s) with {n} errored and are not counted" if count else ""

    # (Nearly) every pair short: one finding about the fabric or the floor, not N node faults.
    if len(measured_set) >= 3 and len(bad_set) >= fabric_share * len(measured_set):
        sample = [direction_of[p] for p in sorted(bad_set, key=sorted)[:FABRIC_SAMPLE]]
        alone_ok = list(ask(sample).values()) if remeasure is not None else []
        share = f"{len(bad_set)} of {len(measured_set)} measured pairs fall short of the {what} expected"
        fabric: FabricAttribution | None = None
        if alone_ok and all(g is True for g in alone_ok):
            fabric = FabricAttribution(
                "fails under load",
                f"{share} inside their rounds, and the {len(sample)} re-measured alone "
                f"({', '.join(_pid(p) for p in sample)}) pass: the fabric fails under load (contention, routing "
                "or oversubscription of the spine), not the nodes. Check the fabric's routing and its "
                "oversubscription against what was sold (see the oversubscription check).",
                under_load=sorted(_pid(direction_of[p]) for p in bad_set),
            )
        elif all(g is False for g in alone_ok):
            alone_text = (
                f", alone too ({', '.join(_pid(p) for p in sample)} re-measured alone)" if alone_ok else " (not re-measured)"
            )
            fabric = FabricAttribution(
                "fabric-wide shortfall",
                f"{share}{alone_text}: a fabric-wide or profile-wide shortfall, not {len(names)} node faults. "
                "Compare the profile's floor with what this fabric is sold as, and check what every port "
                "trained at (port_rate) and the fabric as a whole (subnet manager, switch firmware).",
            )
        if fabric is not None:
            for n in names:
                if n not in out:
                    out[n] = NodeAttribution(
                        n,
                        "ok",
                        round_bad[n],
                        len(peers[n]),
                        retests[n],
                        f"not attributed to {n}: {fabric.verdict} of the whole fabric "
                        f"({len(bad_set)} of {len(measured_set)} pairs; see fabric_attribution){uncounted(n)}",
                    )
            return Attribution(out, fabric)
        # Some short alone, some not: classify pair by pair below.

    # Re-measure before blaming: a pair that failed inside its round, alone.
    confirmed: set[frozenset[str]] = set()
    under_load: list[frozenset[str]] = []
    not_reproduced: list[frozenset[str]] = []
    uncertain: list[frozenset[str]] = []  # its retests fall on both sides of the floor
    suspects = [direction_of[key] for key in sorted(bad_set, key=sorted)]
    found_alone = ask(suspects) if remeasure is not None else {}
    good_alone = [p for p in suspects if found_alone.get(p) is True]
    found_again = ask(good_alone, "in its round again") if remeasure is not None and remeasure.in_round else {}
    for pair in suspects:
        key = _key(*pair)
        alone_now = found_alone.get(pair, False)
        if alone_now is None:
            uncertain.append(key)
            continue
        if not alone_now:
            confirmed.add(key)
            continue
        again = found_again.get(pair, False)
        if again is None:
            uncertain.append(key)
        elif again:
            not_reproduced.append(key)
        else:
            under_load.append(key)

    bad_peers = {n: sorted(next(iter(p - {n})) for p in confirmed if n in p) for n in names}

    def candidate(n: str) -> bool:
        count = len(bad_peers[n])
        return bool(peers[n]) and count >= 2 and count / len(peers[n]) > node_fault_share

    candidates = [n for n in names if candidate(n)]
    good = [n for n in names if peers[n] and n not in candidates and all(p in candidates for p in bad_peers[n])]
    checked: dict[str, tuple[bool, bool, list[str]]] = {}

    def check_nodes(nodes: Iterable[str]) -> None:
        """Re-measure each node alone with up to ``helpers`` known-good nodes, sending and receiving,
        all of them in one step: the helpers spread across the good nodes, so the retests run in
        rounds of disjoint pairs rather than one after another."""
        todo = [n for n in dict.fromkeys(nodes) if n not in checked]
        chosen = spread_helpers(todo, good, helpers, names)
        found = ask([pair for n in todo for h in chosen[n] for pair in ((n, h), (h, n))])
        for n in todo:
            send = [found[(n, h)] for h in chosen[n]]
            receive = [found[(h, n)] for h in chosen[n]]
            # bad only when every retest is bad: one near the floor (None) condemns nobody
            checked[n] = (bool(send) and all(g is False for g in send),
                          bool(receive) and all(g is False for g in receive), chosen[n])

    node_faults: dict[str, str] = {}  # node -> direction ("send" | "receive" | "both" | "")
    unconfirmed: dict[str, str] = {}
    cannot = bool(confirmed) and not good
    if not cannot:
        if remeasure is not None:
            check_nodes(candidates)
        for n in candidates:
            if remeasure is None:
                node_faults[n] = ""
                continue
            send_bad, receive_bad, chosen = checked[n]
            if not chosen or send_bad or receive_bad:
                node_faults[n] = _direction(send_bad, receive_bad)
            else:
                unconfirmed[n] = ", ".join(chosen)

    link_faults: set[frozenset[str]] = set()
    if not cannot:
        suspect_links = [sorted(key) for key in sorted(confirmed, key=sorted) if not set(key) & set(node_faults)]
        if remeasure is not None:
            check_nodes(end for ends in suspect_links for end in ends)  # the ends of every suspect link, one step
        for a, b in suspect_links:
            key = _key(a, b)
            if remeasure is None:
                link_faults.add(key)
                continue
            bad_ends = []
            for end in (a, b):
                send_bad, receive_bad, chosen = checked[end]
                if send_bad or receive_bad:
                    node_faults[end] = _direction(send_bad, receive_bad)
                    bad_ends.append(end)
            if not bad_ends:
                link_faults.add(key)

    for n in names:
        if n in out:
            continue
        result = NodeAttribution(n, "ok", bad_peers[n], len(peers[n]), retests[n])
        count, total = len(bad_peers[n]), len(peers[n])
        retested = f"; {'; '.join(retests[n])}" if retests[n] else ""
        if cannot and bad_peers[n]:
            result.verdict = "cannot attribute"
            result.message = (
                f"cannot attribute: no node is good with its peers. {n} is {what}-bad alone with "
                f"{', '.join(bad_peers[n])}{retested}; without a known-good helper a node fault cannot be told "
                f"from a link fault. Fix the clearest faults (port_rate, port_state) and run again{uncounted(n)}."
            )
        elif n in node_faults:
            result.verdict = "node fault"
            result.direction = node_faults[n] or None
            how = {
                "send": " when it sends (its transmit path)",
                "receive": " when it receives (its receive path)",
                "both": " in both directions",
            }.get(node_faults[n], " (not re-measured against helpers)" if remeasure is None else "")
            result.message = (
                f"{n} is {what}-bad with {count} of {total} measured peers"
                + (f" ({', '.join(bad_peers[n])})" if bad_peers[n] else "")
                + retested
                + f": a node fault{how}. Send {n} to the provider (check its HCA ports, cables to the leaf, "
                "PCIe link and firmware)."
                + uncounted(n)
            )
        else:
            links = sorted(p for p in link_faults if n in p)
            notes = []
            if links:
                others = [next(iter(p - {n})) for p in links]
                result.verdict = "link fault"
                result.message = (
                    f"{n} is {what}-bad with {', '.join(others)}, confirmed alone, but good with "
                    f"{total - count} of its {total} measured peers"
                    + (f" ({'; '.join(retests[n])})" if retests[n] else "")
                    + ": a link fault. Send the cable/switch path between "
                    + " and ".join(f"{n} and {o}" for o in others)
                    + " to the provider."
                )
            else:
                result.message = f"{n} is good with {total - count} of {total} measured peers"
                faulty = [p for p in bad_peers[n] if p in node_faults]
                if faulty:
                    notes.append(f"its bad pairs involve faulty node(s) {', '.join(faulty)}")
                if n in unconfirmed:
                    notes.append(
                        f"it was bad with {count} peers but good alone with {unconfirmed[n]} in both directions"
                    )
            loaded = [next(iter(p - {n})) for p in under_load if n in p]
            if loaded:
                notes.append(
                    f"its pair(s) with {', '.join(loaded)} fell short only inside their round: fails under load, "
                    "a fabric finding (see fabric_attribution), not this node"
                )
            near = [next(iter(p - {n})) for p in uncertain if n in p]
            if near and not links and n not in node_faults and not count:
                result.verdict = "cannot attribute"
                notes.append(
                    f"its pair(s) with {', '.join(near)} fell short in their round, and re-measured alone their "
                    "repeats fall on both sides of the floor: the measurement's own spread near the floor, which "
                    "cannot be attributed (not a cable, not a node)"
                )
            once = [next(iter(p - {n})) for p in not_reproduced if n in p]
            if once:
                notes.append(
                    f"its pair(s) with {', '.join(once)} fell short once but passed alone and in their round again: "
                    "not reproduced, not counted"
                )
            if notes:
                result.message += ("; " if result.message else "") + "; ".join(notes)
            result.message += uncounted(n)
        out[n] = result

    fabric = _fabric(cannot, confirmed, under_load, not_reproduced, direction_of, node_faults, link_faults)
    if uncertain:
        undecided = ", ".join(sorted(_pid(direction_of[p]) for p in uncertain))
        fabric.message += (f"; cannot attribute {undecided}: re-measured alone, their repeats fall on both sides of the "
                           "floor (the measurement's own spread near the floor)")
        if fabric.verdict == "ok":
            fabric.verdict = "cannot attribute"
    return Attribution(out, fabric)


def _direction(send_bad: bool, receive_bad: bool) -> str:
    if send_bad and receive_bad:
        return "both"
    if send_bad:
        return "send"
    if receive_bad:
        return "receive"
    return ""


def _fabric(
    cannot: bool,
    confirmed: set[frozenset[str]],
    under_load: list[frozenset[str]],
    not_reproduced: list[frozenset[str]],
    direction_of: dict[frozenset[str], tuple[str, str]],
    node_faults: Mapping[str, str],
    link_faults: set[frozenset[str]],
) -> FabricAttribution:
    loaded = sorted(_pid(direction_of[p]) for p in under_load)
    once = sorted(_pid(direction_of[p]) for p in not_reproduced)
    tail = f"; not reproduced (a one-off, not counted): {', '.join(once)}" if once else ""
    if cannot:
        return FabricAttribution(
            "cannot attribute",
            f"cannot attribute: no node is good with its peers ({len(confirmed)} pair(s) bad alone)" + tail,
            loaded,
            once,
        )
    if loaded:
        return FabricAttribution(
            "fails under load",
            f"{len(loaded)} pair(s) fell short inside their round, passed alone, and fell short in their round "
            f"again: {', '.join(loaded)}. They fail under load: contention, routing or oversubscription of the "
            "fabric (permutations collide on spine links under static routing), not a node or a cable. Check the "
            "fabric's routing (adaptive routing, the routing engine) and its oversubscription" + tail,
            loaded,
            once,
        )
    found = len(node_faults) + len(link_faults)
    return FabricAttribution(
        "ok",
        (f"no fabric-wide finding: bad pairs are attributed to {found} node/link fault(s)" if found else "no fabric-wide finding")
        + tail,
        loaded,
        once,
    )


_RANK = {"ok": 0, "not measured": 1, "cannot attribute": 2, "link fault": 3, "node fault": 4, "unreachable": 5}
_FABRIC_RANK = {"ok": 0, "cannot attribute": 1, "fails under load": 2, "fabric-wide shortfall": 3}


def merge(per_check: Mapping[str, Attribution]) -> Attribution:
    """One verdict per node, and one for the fabric, from several pair checks (rdma_bandwidth, tcp_throughput).

    The worst verdict wins; the message keeps what each check found, so a node
    that is fine over RDMA but slow over TCP is still named, with the check.
    """
    if len(per_check) == 1:
        return next(iter(per_check.values()))
    nodes = sorted({n for results in per_check.values() for n in results.nodes})
    out: dict[str, NodeAttribution] = {}
    for node in nodes:
        found = [(check, results.nodes[node]) for check, results in per_check.items() if node in results.nodes]
        worst = max(found, key=lambda item: _RANK[item[1].verdict])[1]
        merged = NodeAttribution(
            node,
            worst.verdict,
            sorted({p for _, r in found for p in r.bad_peers}),
            max(r.peers for _, r in found),
            [t for _, r in found for t in r.retests],
            direction=worst.direction,
        )
        problems = [f"{check}: {r.message}" for check, r in found if r.verdict != "ok"]
        merged.message = " | ".join(problems) if problems else " | ".join(f"{c}: {r.message}" for c, r in found)
        out[node] = merged
    fabrics = list(per_check.items())
    worst_fabric = max(fabrics, key=lambda item: _FABRIC_RANK[item[1].fabric.verdict])[1].fabric
    fabric = FabricAttribution(
        worst_fabric.verdict,
        " | ".join(f"{check}: {a.fabric.message}" for check, a in fabrics),
        sorted({p for _, a in fabrics for p in a.fabric.under_load}),
        sorted({p for _, a in fabrics for p in a.fabric.not_reproduced}),
    )
    return Attribution(out, fabric)
