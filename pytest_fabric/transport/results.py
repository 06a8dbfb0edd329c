"""What a run saw, as plain data: how each command ended, and what each connection trusted.

The verdicts, the records and the reports read these; the transports make them.  This module
is a leaf (it imports nothing from the package), so reading the evidence never loads the code
that reaches nodes.  The transports re-export what they make from here:
``pytest_fabric.transport.base.CommandResult``, and the SSH transport's host key module's
:class:`HostKeyLog`, are these same classes.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["DECISIONS", "CommandResult", "HostKeyDecision", "HostKeyLog"]


@dataclass(frozen=True)
class CommandResult:
    """How one command ended on one node."""

    node: str
    command: str
    exit_code: int
    stdout: str
    stderr: str
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


#: what a connection did with the key a node presented
DECISIONS = (
    "verified",  # it is in known_hosts
    "verified by CA",  # a host certificate signed by a @cert-authority key of known_hosts, valid for the host now
    "accepted new",  # unknown; accept-new appended it to known_hosts
    "accepted changed",  # known_hosts holds another key for the host; ignore accepted it anyway
    "accepted unknown",  # not in known_hosts; ignore accepted it without saving it
    "refused changed",  # another key is on file: strict and accept-new refuse it
    "refused unknown",  # not in known_hosts: strict refuses it
    "refused revoked",  # a @revoked line lists it: refused under every policy
    "refused certificate",  # a host certificate known_hosts' CAs do not vouch for (why: in the error)
)


@dataclass(frozen=True)
class HostKeyDecision:
    """One node's host key and what the run did with it."""

    node: str
    name: str  # as known_hosts files it: host, or [host]:port
    decision: str  # one of DECISIONS
    policy: str
    key_type: str
    fingerprint: str  # SHA256:...
    known_hosts: str
    #: the fingerprint on file when it differs (the 'changed' decisions)
    expected: str | None = None


class HostKeyLog:
    """The host key decisions of a run, from every connection, in the order they were made (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decisions: list[HostKeyDecision] = []
        self._owners: dict[str, str] = {}  # host key fingerprint -> the first node that presented it

    def claim(self, node: str, fingerprint: str) -> str | None:
        """Note that ``node`` presented this host key; the other node that presented it first, if one did.

        A host key is one machine's: two names presenting it are one machine listed twice, whose
        pairs would be measured against themselves.
        """
        with self._lock:
            owner = self._owners.setdefault(fingerprint, node)
        return owner if owner != node else None

    def add(self, decision: HostKeyDecision) -> None:
        with self._lock:
            self._decisions.append(decision)

    @property
    def decisions(self) -> list[HostKeyDecision]:
        """Each decision once per node and key; a reconnect that verifies a key accepted earlier adds nothing."""
        with self._lock:
            out: dict[tuple[str, str, str], HostKeyDecision] = {}
            decided = set()
            for d in self._decisions:
                if d.decision == "verified" and (d.node, d.fingerprint) in decided:
                    continue
                decided.add((d.node, d.fingerprint))
                out.setdefault((d.node, d.fingerprint, d.decision), d)
            return list(out.values())

    def to_json(self) -> list[dict[str, Any]]:
        return [asdict(d) for d in self.decisions]
