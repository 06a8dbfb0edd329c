"""Break one node of a shared cluster for a while, and always put it back."""

from __future__ import annotations

import contextlib

from simcluster.cluster import SimCluster, SimNode

__all__ = ["NodeBreaker"]


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

    def mtu(self, node: SimNode | str, mtu: int) -> contextlib.AbstractContextManager[SimNode]:
        """The node's link MTU changed inside the block."""
        return self.cluster.mtu(self._node(node), mtu)

    def restore_all(self) -> None:
        """Undo every break on every node this breaker touched."""
        for node in self.touched.values():
            self.cluster.restore(node)
