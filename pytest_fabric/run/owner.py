"""This run's mark: its id, the controller host, its process and when it started.

One per controller process (a run is a pytest process).  The storage probe writes it into the
``.owner`` of every directory the run makes (probes/leftovers.py), and the cluster lock names the
run holding the nodes by it (cluster_lock.py); a later run reads it back with :meth:`Owner.parse`.
"""

from __future__ import annotations

import os
import platform
import time
import uuid
from dataclasses import dataclass

__all__ = ["Owner", "this_run"]


@dataclass(frozen=True)
class Owner:
    """Who made a directory, from its ``.owner`` line (fields it lacks are empty)."""

    run: str
    controller: str
    pid: int
    pidstart: str
    started: int
    until: int

    def line(self) -> str:
        return (f"run={self.run} controller={self.controller} pid={self.pid} pidstart={self.pidstart} "
                f"started={self.started}")

    @classmethod
    def parse(cls, text: str) -> Owner | None:
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        try:
            return cls(fields["run"], fields.get("controller", ""), int(fields.get("pid", "0")),
                       fields.get("pidstart", ""), int(fields.get("started", "0")), int(fields["until"]))
        except (KeyError, ValueError):
            return None


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (Linux), '' where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: count from its closing one.
    return stat.rsplit(")", 1)[-1].split()[19] if ")" in stat else ""


_THIS_RUN = Owner(uuid.uuid4().hex[:12], platform.node(), os.getpid(), process_start(os.getpid()), int(time.time()), 0)


def this_run() -> Owner:
    """This controller process's mark (one per process: a run is a pytest process)."""
    return _THIS_RUN
