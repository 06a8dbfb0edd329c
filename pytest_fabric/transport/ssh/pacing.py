"""How many SSH handshakes run at once: per sshd, under its MaxStartups, and in all, under this CPU.

sshd drops new connections while MaxStartups of them (10:30:100 by default: 30 % from the 10th,
all from the 100th) are still unauthenticated, and OpenSSH's client then just fails. A controller
of hundreds of nodes opens that many connections to one sshd where a node's sessions overflow
(MaxSessions), or where every node sits behind one address (a bastion, a NAT). So handshakes to
one sshd are started a few at a time: at most :data:`PER_SSHD` at once, halved on every drop (the
sshd allows fewer) and raised by one on every success (it may allow more again), as TCP paces a
congested path. The drop itself is retried with backoff by the transport.

Every handshake also costs this process CPU (key exchange, host key and user key signatures,
under one GIL): 512 at once take each so long that they run past their banner and auth timeouts.
At most :data:`IN_ALL` run at once in the process; the others wait their turn before they open
the TCP connection, so the wait counts against no sshd's LoginGraceTime and no connect timeout.
"""

from __future__ import annotations

import contextlib
import resource
import threading
from collections.abc import Iterator

__all__ = ["IN_ALL", "PER_SSHD", "HandshakePacer", "PACER", "raise_open_files_limit"]

#: handshakes at once to one sshd: below MaxStartups' default start of 10
PER_SSHD = 8
#: handshakes at once in this process (measured: benchmarks/bench_512.py, docs/benchmarks.md)
IN_ALL = 16

Endpoint = tuple[str, int]


class HandshakePacer:
    """Slots for SSH handshakes, per sshd endpoint (adaptive) and in all (fixed)."""

    def __init__(self, per_sshd: int = PER_SSHD, in_all: int = IN_ALL) -> None:
        self.per_sshd = per_sshd
        self.in_all = in_all
        self._cond = threading.Condition()
        self._running: dict[Endpoint, int] = {}
        self._limit: dict[Endpoint, int] = {}
        self._streak: dict[Endpoint, int] = {}  # successes since the limit last moved
        self._total = 0
        #: drops seen per endpoint, for tests and benchmarks
        self.drops: dict[Endpoint, int] = {}

    def limit(self, endpoint: Endpoint) -> int:
        """How many handshakes to ``endpoint`` may run at once now."""
        with self._cond:
            return self._limit.get(endpoint, self.per_sshd)

    @contextlib.contextmanager
    def slot(self, endpoint: Endpoint, *, count_in_all: bool = True) -> Iterator[None]:
        """Hold a handshake slot for ``endpoint`` (waiting for one) while the block runs.

        ``count_in_all`` False: a handshake through a jump host, whose own connection may need a
        slot of its own meanwhile; it is held to its sshd's limit only, so the two never wait on
        each other.
        """
        with self._cond:
            while self._running.get(endpoint, 0) >= self._limit.get(endpoint, self.per_sshd) or (
                count_in_all and self._total >= self.in_all
            ):
                self._cond.wait()
            self._running[endpoint] = self._running.get(endpoint, 0) + 1
            self._total += count_in_all
        try:
            yield
        finally:
            with self._cond:
                self._running[endpoint] -= 1
                self._total -= count_in_all
                self._cond.notify_all()

    def dropped(self, endpoint: Endpoint) -> None:
        """sshd dropped a handshake to ``endpoint`` before its banner: start half as many at once."""
        with self._cond:
            self.drops[endpoint] = self.drops.get(endpoint, 0) + 1
            self._streak[endpoint] = 0
            now = self._limit.get(endpoint, self.per_sshd)
            self._limit[endpoint] = max(1, min(now, self._running.get(endpoint, 0)) // 2)

    def succeeded(self, endpoint: Endpoint) -> None:
        """A handshake to ``endpoint`` completed: after as many in a row as the limit, one more at once.

        Raised by one per limit's worth of successes (TCP's congestion avoidance), not per success:
        an sshd that allows 2 then sees a third at once only every other round, not every time.
        """
        with self._cond:
            now = self._limit.get(endpoint, self.per_sshd)
            if now >= self.per_sshd:
                return
            self._streak[endpoint] = self._streak.get(endpoint, 0) + 1
            if self._streak[endpoint] >= now:
                self._streak[endpoint] = 0
                self._limit[endpoint] = now + 1
                self._cond.notify_all()


#: the process's pacer: every SSHTransport's handshakes go through it
PACER = HandshakePacer()

_raised = False


def raise_open_files_limit() -> None:
    """Raise this process's soft limit of open files to its hard limit, once.

    Each node holds a socket (more where its sessions overflow) and its channels wait on an epoll
    selector, so a few hundred nodes pass the 1,024 that many systems set as the soft limit; the
    hard limit is what the administrator allows, and a process may go up to it on its own.
    """
    global _raised
    if _raised:
        return
    _raised = True
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
