"""One transport per node for the whole run, opened in parallel, each node tried once.

A cluster run touches every node from many tests.  Opening the connections up
front and in parallel turns N sequential handshakes into about one; and a node
that could not be reached must not cost every one of its tests another connect
timeout, so its first error is remembered and raised again at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from pytest_fabric.transport.base import Transport, TransportError

__all__ = ["ConnectionPool"]

logger = logging.getLogger(__name__)


class _Slot:
    """One node's transport, or the error it failed with; its own lock so nodes connect in parallel."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.transport: Transport | None = None
        self.error: TransportError | None = None


class ConnectionPool:
    """Hands out one connected :class:`Transport` per node, made by ``factory(node)``."""

    def __init__(self, factory: Callable[[str], Transport]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}

    def __enter__(self) -> ConnectionPool:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_all()

    def _slot(self, node: str) -> _Slot:
        with self._lock:
            return self._slots.setdefault(node, _Slot())

    def get(self, node: str) -> Transport:
        """The node's transport, connected; raises the node's first connect error on every later call."""
        slot = self._slot(node)
        with slot.lock:
            if slot.error is not None:
                raise slot.error.again()
            if slot.transport is None:
                transport = self._factory(node)
                try:
                    transport.connect()
                except TransportError as exc:
                    slot.error = exc
                    transport.close()
                    raise
                slot.transport = transport
            return slot.transport

    def connected(self, node: str) -> Transport | None:
        """The node's transport if it is open already; never connects."""
        with self._lock:
            slot = self._slots.get(node)
        return slot.transport if slot else None

    def failure(self, node: str) -> TransportError | None:
        """The error ``node`` failed with in this run, if it did."""
        with self._lock:
            slot = self._slots.get(node)
        return slot.error if slot else None

    def connect_all(
        self, nodes: Iterable[str], max_workers: int = 32
    ) -> dict[str, TransportError | None]:
        """Connect to ``nodes`` in parallel; return each node's error, or None where it worked."""
        names = list(dict.fromkeys(nodes))

        def attempt(node: str) -> TransportError | None:
            try:
                self.get(node)
            except TransportError as exc:
                return self.failure(node) or exc
            return None

        if not names:
            return {}
        pool = ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(names))), thread_name_prefix="pf-connect")
        try:
            results = dict(zip(names, pool.map(attempt, names)))
        except BaseException:
            # Stopped (Ctrl-C, SIGTERM) while nodes connect: the run unwinds now, not after the
            # slowest connect (an allocation that waits minutes for nodes); it ends what is left.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return results

    def interrupt_all(self, max_workers: int = 64) -> None:
        """Kill every running foreground command on every node, in parallel.  Never raises."""
        with self._lock:
            transports = [slot.transport for slot in self._slots.values() if slot.transport is not None]
        _on_each(transports, "interrupt", max_workers)

    def close_all(self, max_workers: int = 32) -> None:
        """Close every transport (stopping their background processes) in parallel.  Never raises."""
        with self._lock:
            transports = [
                slot.transport for slot in self._slots.values() if slot.transport is not None
            ]
            self._slots.clear()
        _on_each(transports, "close", max_workers)


def _on_each(transports: list[Transport], method: str, max_workers: int) -> None:
    """Call ``method`` on every transport in parallel; one node's trouble never stops the others."""

    def call(transport: Transport) -> None:
        try:
            getattr(transport, method)()
        except Exception:
            logger.debug("%s on %s failed", method, transport.node, exc_info=True)

    if transports:
        with ThreadPoolExecutor(
            max_workers=max(1, min(max_workers, len(transports))), thread_name_prefix=f"pf-{method}"
        ) as pool:
            list(pool.map(call, transports))
