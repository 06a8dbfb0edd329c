"""What mpirun (Open MPI 4's ORTE, Open MPI 5's PRRTE) says when a launch across nodes fails: which
hosts it could not reach, and which node launched it.

A failed launch names two nodes, and only one is at fault: the node mpirun ran on (the HNP) and
the host its daemon could not be started on or lost. Read for the second::

    ssh: connect to host 10.200.0.13 port 22: Connection refused        <- ssh, for the daemon's host
    ORTE was unable to reliably start one or more daemons.
    ...
      HNP daemon   : [[41235,0],0] on node node02                       <- the launcher
      Remote daemon: [[41235,0],2] on node node03                       <- the host lost
    ...
      my node:   node02                                                 <- the launcher
      target node:  10.200.0.13                                         <- the host not reached

The texts are Open MPI's help files (``help-errmgr-base.txt``: ``node-died``, ``no-connect``,
``no-path``, ``failed-daemon-launch``, ``failed-daemon``) and ssh's own errors, which mpirun passes on.
Pure: text in, the hosts as mpirun wrote them out (address or name; the probe maps them to nodes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["LaunchFailure", "MpirunLaunch", "parse"]

TOOL = "mpirun"

_SSH_CONNECT = re.compile(r"ssh: connect to host (?P<host>\S+) port \d+: (?P<why>.+?)\s*$")
_SSH_RESOLVE = re.compile(r"ssh: Could not resolve hostname (?P<host>[^\s:]+): (?P<why>.+?)\s*$")
_SSH_DENIED = re.compile(r"^(?:[^\s@]+@)?(?P<host>[^\s@:]+): (?P<why>Permission denied \(.*\))\.?\s*$")
_SSH_CLOSED = re.compile(r"Connection (?P<how>closed|reset) by (?:(?:authenticating|invalid) user \S+ )?"
                         r"(?P<host>\S+) port \d+")
_REMOTE = re.compile(r"^\s*Remote daemon\s*:\s*\S+ on node (?P<host>\S+)\s*$")
_HNP = re.compile(r"^\s*HNP daemon\s*:\s*\S+ on node (?P<host>\S+)\s*$")
_MY_NODE = re.compile(r"^\s*my node:\s*(?P<host>\S+)\s*$")
_TARGET = re.compile(r"^\s*target node:\s*(?P<host>\S+)\s*$")
_DAEMONS_FAILED = ("was unable to reliably start one or more daemons", "daemon has unexpectedly failed after launch")


@dataclass(frozen=True)
class LaunchFailure:
    """A host the launch could not reach, as mpirun (or ssh) wrote it, and why, in its words."""

    host: str
    why: str


@dataclass(frozen=True)
class MpirunLaunch:
    """What a failed launch says: the hosts not reached (each once, in order), the launcher if named."""

    failures: tuple[LaunchFailure, ...]
    launcher: str | None
    #: ORTE/PRRTE said it could not start (or lost) its daemons, whether or not a host is named
    daemons_failed: bool

    @property
    def hosts(self) -> tuple[str, ...]:
        return tuple(f.host for f in self.failures)


def parse(text: str) -> MpirunLaunch:
    """Read mpirun's output (stdout and stderr together) for the hosts its launch failed on."""
    found: dict[str, str] = {}
    launcher: str | None = None
    lost_daemon = unreachable_target = False
    for line in text.splitlines():
        if "lost communication with a remote daemon" in line:
            lost_daemon = True
        elif "unable to establish a communication connection" in line or "does not know how to route" in line:
            unreachable_target = True
        match = _HNP.match(line) or _MY_NODE.match(line)
        if match:
            launcher = launcher or match.group("host")
            continue
        match = _REMOTE.match(line)
        if match and lost_daemon:
            found.setdefault(match.group("host"), "mpirun lost communication with its daemon there")
            continue
        match = _TARGET.match(line)
        if match and unreachable_target:
            found.setdefault(match.group("host"), "mpirun could not connect to its daemon there")
            continue
        for pattern in (_SSH_CONNECT, _SSH_RESOLVE):
            match = pattern.search(line)
            if match:
                found.setdefault(match.group("host"), "ssh: " + match.group("why"))
                break
        else:
            match = _SSH_DENIED.match(line.strip())
            if match:
                found.setdefault(match.group("host"), "ssh: " + match.group("why"))
                continue
            match = _SSH_CLOSED.search(line)
            if match:
                found.setdefault(match.group("host"), f"ssh: connection {match.group('how')} by the host")
    failed = any(words in text for words in _DAEMONS_FAILED) or lost_daemon
    return MpirunLaunch(tuple(LaunchFailure(h, w) for h, w in found.items() if h != launcher), launcher, failed)
