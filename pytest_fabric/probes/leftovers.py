"""What a run writes under a node's storage path is marked, so a later run can find what a dead one left.

A run removes its fio directories itself, on Ctrl-C and SIGTERM too (stopgate.py). A controller
killed with SIGKILL, or lost with its machine, removes nothing: its files (size x jobs, on every
node, or on a shared mount once per node) would stay for good. So every directory a run works
in is ``<path>/.pytest-fabric-<run>.XXXXXX`` with an ``.owner`` line written as it is made::

    run=<id> controller=<host> pid=<pid> pidstart=<ticks> started=<epoch> until=<epoch>

The command that makes a run's directory (one round trip, as before) also lists the other runs'
directories under the same path, with their ``.owner`` and the node's clock. One is removed only
when its run is over, judged on the controller (:func:`judge`):

- its ``until`` has passed on the node's clock: its run promised not to use it after that
  (:data:`LEASE_S` after it was made; a directory lives minutes); or
- its controller is this host and its process is gone (the PID no longer runs, or runs another
  program: its start time differs).

Anything else may be a live run (another controller, within its lease; this host, its process
alive) and is left alone. A directory without an ``.owner`` (another run is making it) is left too,
and so is a symbolic link of that name (only directories the runs made are taken; ``rm`` never
follows a link inside one).
Removing one (a second command, only when there is something to remove) claims it by renaming it
(of several nodes sweeping a shared mount, one wins), kills a fio of that directory still running
on the node (matched by its ``--directory=``), measures it (``du``) and removes it; the check's
message, its ``extra["leftovers_removed"]`` and the terminal summary say what was removed, whose
it was and how much.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_fabric.run.owner import Owner, this_run
from pytest_fabric.run.owner import process_start as _process_start
from pytest_fabric.transport.results import CommandResult
from pytest_fabric.transport.shellcmd import fill

__all__ = ["LEASE_S", "PREFIX", "Leftover", "Owner", "judge", "listing_and_mkdir", "parse_listing", "removal", "this_run"]

#: the name every run's directories start with, under the storage path
PREFIX = ".pytest-fabric-"
#: how long a run may use a directory it made (its fio runs are minutes; a day leaves room for any)
LEASE_S = 24 * 3600
_NOW = "@@now"
_LEFTOVER = "@@leftover"
_REMOVED = "@@removed"


@dataclass(frozen=True)
class Leftover:
    """Another run's directory under the path, as the node listed it."""

    directory: str
    owner: Owner | None


def listing_and_mkdir(parent: str, run: Owner) -> str:
    """One command: a fresh directory of ``run``'s under ``parent``, its ``.owner`` written; the node's
    clock; the other runs' directories there with their owner; the directory made, on the last line."""
    return fill(
        # mktemp first: the probes' evidence (and their tests) read the command as the mktemp it is
        "mktemp -d {parent}/{mine}XXXXXX | {{ read -r d && "
        "printf '%s until=%s\\n' {owner} $(( $(date +%s) + {lease} )) > \"$d/.owner\" || exit 1; "
        "p={parent}; echo " + _NOW + " $(date +%s); "
        "for o in \"$p\"/" + PREFIX + "*; do [ -d \"$o\" ] && [ ! -L \"$o\" ] || continue; "
        "case \"$o\" in \"$p\"/{mine}*|*.removing-*) continue;; esac; "
        "printf '" + _LEFTOVER + "\\t%s\\t%s\\n' \"$o\" \"$(head -c 512 \"$o/.owner\" 2>/dev/null | head -n 1)\"; "
        "done; echo \"$d\"; }}",
        parent=parent, mine=f"{PREFIX}{run.run}.", owner=run.line(), lease=str(LEASE_S),
    )


def parse_listing(stdout: str) -> tuple[int | None, list[Leftover], str]:
    """The node's clock, the other runs' directories, and the directory made (the last line)."""
    now: int | None = None
    found: list[Leftover] = []
    made = ""
    for line in stdout.splitlines():
        if line.startswith(_NOW + " "):
            try:
                now = int(line.split()[1])
            except (IndexError, ValueError):
                now = None
        elif line.startswith(_LEFTOVER + "\t"):
            _, directory, owner = (line.split("\t", 2) + ["", ""])[:3]
            found.append(Leftover(directory, Owner.parse(owner)))
        elif line.strip():
            made = line.strip()
    return now, found, made


def _alive(owner: Owner) -> bool:
    if owner.pid <= 0:
        return True  # cannot tell: taken as alive
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: it runs
    return not owner.pidstart or _process_start(owner.pid) in ("", owner.pidstart)


def judge(leftover: Leftover, node_now: int | None, run: Owner) -> str | None:
    """Why ``leftover``'s run is over (it may be removed), or None: it may be alive, leave it."""
    owner = leftover.owner
    if owner is None or owner.run == run.run:
        return None
    if node_now is not None and owner.until < node_now:
        return f"its lease ended {node_now - owner.until} s ago"
    if owner.controller == run.controller and not _alive(owner):
        return f"its controller process {owner.pid} on {owner.controller} is gone"
    return None


def removal(dead: Sequence[Leftover], run: Owner) -> str:
    """One command removing ``dead``: each claimed by a rename, its fio on this node killed, measured, removed."""
    parts = []
    for leftover in dead:
        directory = leftover.directory
        head, tail = "--direc", f"tory={directory}"  # assembled at run time: pkill must not match this shell
        parts.append(fill(
            "d={d}; c=\"$d\".removing-{mine}; if mv -- \"$d\" \"$c\" 2>/dev/null; then "
            "m={head}; m=\"$m\"{tail}; pkill -KILL -f -- \"$m\" 2>/dev/null; "
            "s=$(du -sb -- \"$c\" 2>/dev/null | cut -f1); rm -rf -- \"$c\"; "
            "printf '" + _REMOVED + "\\t%s\\t%s\\n' \"$d\" \"${{s:-0}}\"; fi",
            d=directory, mine=run.run, head=head, tail=tail,
        ))
    return "; ".join(parts) + "; true"


def removed(result: CommandResult, dead: Sequence[Leftover], node: str, reasons: dict[str, str]) -> list[str]:
    """What the removal command says it removed, in words: size, whose, when made, why it was over."""
    owners = {leftover.directory: leftover.owner for leftover in dead}
    out = []
    for line in result.stdout.splitlines():
        if not line.startswith(_REMOVED + "\t"):
            continue
        _, directory, size = (line.split("\t", 2) + ["", ""])[:3]
        owner = owners.get(directory)
        try:
            amount = _size(int(size))
        except ValueError:
            amount = "files"
        whose = (f"run {owner.run} (controller {owner.controller}, pid {owner.pid}, made "
                 f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(owner.started))})" if owner else "a run")
        out.append(f"removed {amount} left by {whose} in {directory} on {node}: {reasons.get(directory, 'its run is over')}")
    return out


def _size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"
