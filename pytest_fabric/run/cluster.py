"""The cluster under test as tests see it: nodes they can run commands on.

``Cluster`` holds the inventory, the profile and one connection per node (the
transport pool opens them lazily and remembers a node that could not be
reached, so its other tests error at once with the first cause).
``NodeHandle`` is what the ``node`` fixture gives a test.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_fabric.config.inventory import Inventory, Node
from pytest_fabric.config.profile import Profile
from pytest_fabric.run.batches import DEFAULT_FANOUT
from pytest_fabric.run.stopgate import StopGate
from pytest_fabric.run.tenant_tools import InstalledTool, TenantTools
from pytest_fabric.transport.base import BackgroundProcess, FileUpload, Transport, TransportError
from pytest_fabric.transport.gather import Coalescing, Together
from pytest_fabric.transport.pool import ConnectionPool
from pytest_fabric.transport.results import CommandResult

__all__ = ["Cluster", "NodeHandle", "NodePair"]

DEFAULT_TIMEOUT_S = 60.0


@dataclass
class NodeHandle:
    """One node: its inventory entry and a way to run commands on it."""

    spec: Node
    _pool: ConnectionPool = field(repr=False)
    #: every command passes it: refused once the run stops (stopgate.py); None: nothing stops it
    _gate: StopGate | None = field(default=None, repr=False)
    #: the tenant's pinned tools (inventory ``tools:``); None: every tool is the node's own
    _tools: TenantTools | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def address(self) -> str:
        """The address other nodes send data-plane traffic to."""
        return self.spec.address

    @property
    def labels(self) -> dict[str, str]:
        return self.spec.labels

    @property
    def transport(self) -> Transport:
        return self._pool.get(self.name)

    def run(
        self, command: str, *, timeout: float = DEFAULT_TIMEOUT_S, check: bool = True, cleanup: bool = False
    ) -> CommandResult:
        """Run a shell command on the node (killed there after ``timeout`` seconds).

        Once the run stops (Ctrl-C, SIGTERM) it is refused with ``RunStopped``, unless it is a
        ``cleanup`` (removing what the run wrote), which still runs, for a few seconds at most.
        """
        if self._gate is None:
            return self.transport.run(command, timeout=timeout, check=check)
        with self._gate.passing(self.name, command, cleanup=cleanup):
            return self.transport.run(command, timeout=self._gate.timeout(timeout, cleanup=cleanup), check=check)

    def tool(self, name: str) -> str:
        """The words that run tool ``name`` here, its arguments to follow: the tenant's verified copy by
        absolute path in a clean environment where the inventory pins it (uploaded on first use, once
        per run), else ``name`` as the node's PATH finds it (run/tenant_tools.py)."""
        return name if self._tools is None else self._tools.command(self.name, name)

    def tenant_tool(self, name: str) -> InstalledTool | None:
        """The tenant's copy of ``name`` on this node, uploaded and verified; None where it is not pinned."""
        return None if self._tools is None else self._tools.installed(self.name, name)

    def put_file(self, local: Path, remote: str, *, mode: int = 0o600, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        """Copy the file ``local`` to ``remote`` on the node (refused once the run stops); a transport that
        cannot upload files is an error naming the node and the fix."""
        transport = self.transport
        if not isinstance(transport, FileUpload):
            raise TransportError(
                self.name, f"cannot upload {local}: its transport ({type(transport).__name__}) has no file upload",
                command=f"put {local} {remote}",
                fix="reach this node over SSH (transport: ssh in the inventory) to upload files to it",
            )
        if self._gate is None:
            transport.put_file(local, remote, mode=mode, timeout=timeout)
            return
        with self._gate.passing(self.name, f"put {local} {remote}"):
            transport.put_file(local, remote, mode=mode, timeout=self._gate.timeout(timeout))

    def start(self, command: str, *, timeout: float) -> BackgroundProcess:
        """Start a server on the node; it dies after ``timeout`` at the latest (refused once the run stops)."""
        if self._gate is None:
            return self.transport.start(command, timeout=timeout)
        with self._gate.passing(self.name, command):
            return self.transport.start(command, timeout=timeout)

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class NodePair:
    """Two nodes measured against each other: ``a`` is the client, ``b`` the server."""

    a: NodeHandle
    b: NodeHandle
    round: int = 0
    slot: int = 0

    @property
    def id(self) -> str:
        return f"{self.a.name}<->{self.b.name}"

    @property
    def names(self) -> list[str]:
        return [self.a.name, self.b.name]

    def __str__(self) -> str:
        return self.id


class Cluster:
    """The inventory's nodes, the profile, and their connections."""

    def __init__(
        self, inventory: Inventory, profile: Profile, make_transport: Callable[[str], Transport], *, fanout: int = DEFAULT_FANOUT,
        tools: TenantTools | None = None,
    ) -> None:
        self.fanout = fanout  # at most this many connections are opened at once
        self.inventory = inventory
        self.profile = profile
        self.pool = ConnectionPool(make_transport)
        #: the one stop every node command passes (stopgate.py)
        self.gate = StopGate(lambda: self.pool.interrupt_all(max_workers=self.fanout))
        if inventory.tools and tools is None:
            # fail closed: pins that nothing routes would run the provider's tools under the tenant's name
            raise ValueError(f"the inventory pins {', '.join(p.name for p in inventory.tools)} but nothing routes "
                             "the cluster's tools to the pinned copies (measurements/tenant_tools.py not registered?)")
        #: the tenant's pinned tools, routed by every NodeHandle.tool (None: the nodes' own tools)
        self.tools = tools
        self._handles = {n.name: NodeHandle(n, self.pool, self.gate, tools) for n in inventory.nodes}

    @property
    def name(self) -> str:
        return self.inventory.name

    @property
    def nodes(self) -> list[NodeHandle]:
        return list(self._handles.values())

    def node(self, name: str) -> NodeHandle:
        return self._handles[name]

    def pair(self, a: str, b: str, round: int = 0, slot: int = 0) -> NodePair:
        return NodePair(self._handles[a], self._handles[b], round, slot)

    def connect(self, names: list[str] | None = None) -> dict[str, TransportError | None]:
        """Open connections to ``names`` (all nodes by default) in parallel."""
        return self.pool.connect_all(names if names is not None else list(self._handles), max_workers=self.fanout)

    @contextlib.contextmanager
    def together(self, names: Iterable[str]) -> Iterator[Together]:
        """A block in which ``names`` run the same commands at about the same time (a wave).

        Nodes whose transport can launch one command on many nodes at once (Slurm: one step)
        then share one launch per command; over SSH nothing changes.
        """
        with contextlib.ExitStack() as stack:
            by_launcher: dict[int, tuple[Coalescing, list[str]]] = {}
            for name in dict.fromkeys(names):
                transport = self.pool.connected(name)
                if isinstance(transport, Coalescing):
                    key = id(transport.launcher)
                    by_launcher.setdefault(key, (transport, []))[1].append(name)
            groups = [stack.enter_context(t.gathering(nodes)) for t, nodes in by_launcher.values()]
            yield Together(groups)

    def interrupt(self) -> None:
        """The run was interrupted: start nothing new on any node and kill what still runs (StopGate.stop)."""
        self.gate.stop()

    def close(self) -> None:
        self.gate.close()
        self.pool.close_all()
