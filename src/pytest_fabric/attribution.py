"""Attribution: is a bad pair the fault of a node, or of the link between two nodes?

After the pair rounds, a node that is bad with most of its peers is a node
fault (its HCA, cable to the leaf, PCIe slot, firmware); a bad pair whose nodes
are both fine with everyone else is a link fault (the cable or switch ports
between them).  Before the verdict, suspects are re-measured against
known-good nodes, as GCP's two-pass scheme does: a one-off bad sample must not
condemn a node, and a node that was only ever paired with a bad node gets a
second chance.  The classification here is pure; ``retest`` is a callable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable

__all__ = ["NodeAttribution", "Retest", "attribute"]

Retest = Callable[[str, str], bool]  # (node, known-good peer) -> is the pair good now?


@dataclass
class NodeAttribution:
    node: str
    verdict: str  # "ok" | "node fault" | "link fault"
    bad_peers: list[str] = field(default_factory=list)
    peers: int = 0
    retests: list[str] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "node": self.node,
            "verdict": self.verdict,
            "bad_peers": list(self.bad_peers),
            "peers": self.peers,
            "retests": list(self.retests),
            "message": self.message,
        }


def _key(a: str, b: str) -> frozenset[str]:
    return frozenset((a, b))


def attribute(
    nodes: Iterable[str],
    measured: Iterable[tuple[str, str]],
    bad: Iterable[tuple[str, str]],
    *,
    node_fault_share: float = 0.5,
    retest: Retest | None = None,
    what: str = "bandwidth",
) -> dict[str, NodeAttribution]:
    """Classify every node from the measured pairs and the bad ones among them."""
    names = list(nodes)
    measured_set = {_key(a, b) for a, b in measured if a != b}
    bad_set = {_key(a, b) for a, b in bad if a != b} & measured_set
    peers = {n: sorted(next(iter(p - {n})) for p in measured_set if n in p) for n in names}
    bad_peers = {n: sorted(next(iter(p - {n})) for p in bad_set if n in p) for n in names}

    def is_node_fault(n: str) -> bool:
        count = len(bad_peers[n])
        if not peers[n] or count == 0:
            return False
        return count >= 2 and count / len(peers[n]) > node_fault_share

    node_faults = {n for n in names if is_node_fault(n)}
    # Known-good: not faulty, and bad only with nodes already found faulty.
    good = [n for n in names if n not in node_faults and all(p in node_faults for p in bad_peers[n])]
    retests: dict[str, list[str]] = {n: [] for n in names}

    link_faults: set[frozenset[str]] = set()
    for pair in sorted(bad_set, key=sorted):
        a, b = sorted(pair)
        if a in node_faults or b in node_faults:
            continue
        if retest is None or not good:
            link_faults.add(pair)
            continue
        # Re-measure each end against a node that was good with everyone.
        verdicts = {}
        for end in (a, b):
            helper = next((g for g in good if g not in pair), None)
            if helper is None:
                continue
            ok = retest(end, helper)
            verdicts[end] = ok
            retests[end].append(f"{end}<->{helper} {'good' if ok else 'bad'} on retest")
        bad_ends = [end for end, ok in verdicts.items() if not ok]
        if bad_ends:
            node_faults.update(bad_ends)
        else:
            link_faults.add(pair)

    out: dict[str, NodeAttribution] = {}
    for n in names:
        result = NodeAttribution(n, "ok", bad_peers[n], len(peers[n]), retests[n])
        if n in node_faults:
            result.verdict = "node fault"
            result.message = (
                f"{n} is bad with {len(bad_peers[n])} of {len(peers[n])} peers"
                + (f" ({', '.join(bad_peers[n])})" if bad_peers[n] else "")
                + (f"; {'; '.join(retests[n])}" if retests[n] else "")
                + f": a node fault. Send {n} to the provider (check its HCA ports, cables to the leaf, PCIe link and firmware)."
            )
        else:
            links = sorted(p for p in link_faults if n in p)
            if links:
                others = [next(iter(p - {n})) for p in links]
                result.verdict = "link fault"
                result.message = (
                    f"{n} is {what}-bad with {', '.join(others)} but good with "
                    f"{len(peers[n]) - len(bad_peers[n])} of its {len(peers[n])} peers"
                    + (f" ({'; '.join(retests[n])})" if retests[n] else "")
                    + ": a link fault. Send the cable/switch path between "
                    + " and ".join(f"{n} and {o}" for o in others)
                    + " to the provider."
                )
            else:
                bad_with_faulty = [p for p in bad_peers[n] if p in node_faults]
                result.message = (
                    f"{n} is good with {len(peers[n]) - len(bad_peers[n])} of {len(peers[n])} peers"
                    + (f"; its bad pairs involve faulty node(s) {', '.join(bad_with_faulty)}" if bad_with_faulty else "")
                )
        out[n] = result
    return out


_RANK = {"ok": 0, "link fault": 1, "node fault": 2}


def merge(per_check: dict[str, dict[str, NodeAttribution]]) -> dict[str, NodeAttribution]:
    """One verdict per node from the verdicts of several pair checks (rdma_bandwidth, tcp_throughput).

    The worst verdict wins; the message keeps what each check found, so a node
    that is fine over RDMA but slow over TCP is still named, with the check.
    """
    if len(per_check) == 1:
        return next(iter(per_check.values()))
    nodes = sorted({n for results in per_check.values() for n in results})
    out: dict[str, NodeAttribution] = {}
    for node in nodes:
        found = [(check, results[node]) for check, results in per_check.items() if node in results]
        worst = max(found, key=lambda item: _RANK[item[1].verdict])[1]
        merged = NodeAttribution(
            node,
            worst.verdict,
            sorted({p for _, r in found for p in r.bad_peers}),
            max(r.peers for _, r in found),
            [t for _, r in found for t in r.retests],
        )
        problems = [f"{check}: {r.message}" for check, r in found if r.verdict != "ok"]
        merged.message = " | ".join(problems) if problems else " | ".join(f"{c}: {r.message}" for c, r in found)
        out[node] = merged
    return out
