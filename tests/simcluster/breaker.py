"""Break one node of a shared cluster for a while, and always put it back.

Besides the node-wide faults (a shaped link, a stopped or frozen sshd, another MTU), two wrap the
node's real iperf3 (a script of the same name earlier on the node's PATH, /usr/local/bin, that
runs /usr/bin/iperf3):

- :meth:`NodeBreaker.noisy`: a link whose capacity changes from run to run. Each iperf3 client
  run from the node to one peer takes the next rate of a cycle (tbf on the node's eth0, set just
  before the run), so its repeats fall where the cycle puts them, above or below a floor, however
  loaded the machine is (as long as the machine moves more than the highest rate). Runs to any
  other peer are unshaped.
- :meth:`NodeBreaker.iperf3_runs`: every client run of the node logged with its start and end
  (host clock) and arguments: what ran, and what ran at the same time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from simcluster.cluster import SimCluster, SimNode

__all__ = ["Iperf3Run", "NodeBreaker", "read_iperf3_runs"]

REAL_IPERF3 = "/usr/bin/iperf3"
RUNS_LOG = ".iperf3-runs"  # in the node's bin dir: the host reads it as node.bindir / RUNS_LOG
NOISY_COUNT = ".noisy-runs"


@dataclass(frozen=True)
class Iperf3Run:
    """One iperf3 client run on a node, as its wrapper logged it."""

    node: str
    start: float
    end: float
    args: tuple[str, ...]

    @property
    def port(self) -> int | None:
        return int(self.args[self.args.index("-p") + 1]) if "-p" in self.args else None

    @property
    def target(self) -> str | None:
        return self.args[self.args.index("-c") + 1] if "-c" in self.args else None


def read_iperf3_runs(node: SimNode) -> list[Iperf3Run]:
    """The client runs :meth:`NodeBreaker.iperf3_runs` logged on ``node`` so far."""
    log = node.bindir / RUNS_LOG
    runs = []
    for line in (log.read_text().splitlines() if log.exists() else []):
        start, end, *args = line.split()
        runs.append(Iperf3Run(node.name, float(start), float(end), tuple(args)))
    return runs


def _burst(rate_mbit: int) -> int:
    # as SimCluster.shape: ~4 ms at the rate, never below a few jumbo frames
    return max(rate_mbit * 1_000_000 // 8 // 250, 64 * 1024)


class NodeBreaker:
    """Context managers that break one node of the shared cluster and always restore it.

    Each restores on leaving the block; the fixture also restores every node touched when the
    test ends, in case a test breaks a node outside a block.
    """

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.touched: dict[str, SimNode] = {}

    def _node(self, node: SimNode | str) -> SimNode:
        resolved = self.cluster.node(node) if isinstance(node, str) else node
        self.touched[resolved.name] = resolved
        return resolved

    def shaped(
        self, node: SimNode | str, rate_mbit: int
    ) -> contextlib.AbstractContextManager[SimNode]:
        """The node's link limited to rate_mbit both ways inside the block."""
        return self.cluster.shaped(self._node(node), rate_mbit)

    def frozen(self, node: SimNode | str) -> contextlib.AbstractContextManager[SimNode]:
        """The node's sshd SIGSTOPped inside the block: TCP connects, no SSH banner."""
        return self.cluster.frozen(self._node(node))

    def stopped(self, node: SimNode | str) -> contextlib.AbstractContextManager[SimNode]:
        """The node's sshd killed inside the block: connection refused."""
        return self.cluster.stopped(self._node(node))

    def stop_sshd(self, node: SimNode | str) -> SimNode:
        """Kill the node's sshd now, mid-run (everything it runs ends); started again when the test ends."""
        resolved = self._node(node)
        self.cluster.stop_sshd(resolved)
        return resolved

    def link_down(self, node: SimNode | str) -> SimNode:
        """Take the node's link down now, mid-run (a pulled cable); up again when the test ends."""
        resolved = self._node(node)
        self.cluster.set_link(resolved, False)
        return resolved

    def mtu(self, node: SimNode | str, mtu: int) -> contextlib.AbstractContextManager[SimNode]:
        """The node's link MTU changed inside the block."""
        return self.cluster.mtu(self._node(node), mtu)

    @contextlib.contextmanager
    def noisy(self, node: SimNode | str, peer: SimNode | str, rates_mbit: Sequence[int]) -> Iterator[SimNode]:
        """Inside the block, the n-th iperf3 client run from ``node`` to ``peer`` (counting from 0,
        the sweep's included) gets ``rates_mbit[n % len(rates_mbit)]``; runs to others are unshaped.

        Use one iperf3 process per pair (``processes: 1``): two at once would each take a rate.
        """
        resolved, other = self._node(node), self._node(peer)
        if not rates_mbit or min(rates_mbit) <= 0:
            raise ValueError(f"rates_mbit must be positive rates, got {list(rates_mbit)}")
        rates = " ".join(str(int(r)) for r in rates_mbit)
        bursts = " ".join(str(_burst(int(r))) for r in rates_mbit)
        count = f"/usr/local/bin/{NOISY_COUNT}"
        script = f"""#!/bin/sh
# a noisy link (tests/simcluster/breaker.py): each run to {other.name} takes the next rate of the cycle
case " $* " in
  *" -c {other.address} "*)
    n=$(cat {count} 2>/dev/null || echo 0)
    echo $((n + 1)) > {count}
    pick=$((n % {len(rates_mbit)} + 1))
    rate=$(echo {rates} | cut -d' ' -f$pick)
    burst=$(echo {bursts} | cut -d' ' -f$pick)
    /usr/sbin/tc qdisc replace dev eth0 root tbf rate "${{rate}}mbit" burst "$burst" latency 20ms
    ;;
  *" -c "*) /usr/sbin/tc qdisc del dev eth0 root 2>/dev/null ;;
esac
exec {REAL_IPERF3} "$@"
"""
        (resolved.bindir / NOISY_COUNT).unlink(missing_ok=True)
        self.cluster.install_tool(resolved, "iperf3", script)
        try:
            yield resolved
        finally:
            self.cluster.remove_tool(resolved, "iperf3")
            (resolved.bindir / NOISY_COUNT).unlink(missing_ok=True)
            self.cluster.unshape(resolved)

    def noisy_runs(self, node: SimNode | str) -> int:
        """How many runs to the peer :meth:`noisy` has shaped on ``node`` so far."""
        count = self._node(node).bindir / NOISY_COUNT
        return int(count.read_text()) if count.exists() else 0

    @contextlib.contextmanager
    def iperf3_runs(
        self, nodes: Sequence[SimNode | str], slow_links: Sequence[tuple[str, str, int]] = ()
    ) -> Iterator[list[SimNode]]:
        """Inside the block, every iperf3 client run of ``nodes`` is logged (:func:`read_iperf3_runs`).
        ``slow_links``: (sender, receiver, Mbit/s): every run from the sender to that receiver takes
        the rate (a bad cable, one direction), runs to others are unshaped."""
        resolved = [self._node(n) for n in nodes]
        for node in resolved:
            shaped = "".join(
                f"""  *" -c {self._node(receiver).address} "*)
    /usr/sbin/tc qdisc replace dev eth0 root tbf rate {int(rate)}mbit burst {_burst(int(rate))} latency 20ms ;;
"""
                for sender, receiver, rate in slow_links if self._node(sender).name == node.name)
            script = f"""#!/bin/sh
# iperf3 with every client run logged (tests/simcluster/breaker.py)
case " $* " in *" -c "*) ;; *) exec {REAL_IPERF3} "$@" ;; esac
case " $* " in
{shaped}  *) {"/usr/sbin/tc qdisc del dev eth0 root 2>/dev/null" if shaped else ":"} ;;
esac
start=$(date +%s.%N)
{REAL_IPERF3} "$@"
rc=$?
echo "$start $(date +%s.%N) $*" >> /usr/local/bin/{RUNS_LOG}
exit $rc
"""
            (node.bindir / RUNS_LOG).unlink(missing_ok=True)
            self.cluster.install_tool(node, "iperf3", script)
        try:
            yield resolved
        finally:
            for node in resolved:
                self.cluster.remove_tool(node, "iperf3")
                if any(self._node(sender).name == node.name for sender, _, _ in slow_links):
                    self.cluster.unshape(node)

    def restore_all(self) -> None:
        """Undo every break on every node this breaker touched."""
        for node in self.touched.values():
            self.cluster.remove_tool(node, "iperf3")
            (node.bindir / NOISY_COUNT).unlink(missing_ok=True)
            self.cluster.restore(node)
