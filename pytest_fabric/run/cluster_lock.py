"""A run takes the cluster: a lock on every node, so a second run against the same nodes stops at once.

Two runs on the same nodes measure each other's traffic and collide on their servers' ports
(iperf3's "the server is busy"); each then sends back healthy nodes. So before the first check
every reachable node is locked by this run, and a run that finds a node locked stops, naming the
run that holds it (its id, controller, pid, and since when), or waits for it (``--fabric-lock=wait``).

The lock is ``flock(1)`` on ``<base>-<uid>/cluster.lock`` in the node's /tmp, held by a background
command of this run (:func:`holder_command`) for as long as the run lasts. The kernel drops the lock
when that command ends, however it ends (the run stops it at the end; the transport's timeout ends
it at the latest; an SSH session whose controller vanished ends it within seconds, as the holder
watches the process that started it). The file's one line says whose it is::

    run=<id> controller=<host> pid=<pid> pidstart=<ticks> started=<epoch> holder=<node pid> since=<node epoch>

A run that takes a lock whose line names another run says so: that run's holder is gone (a run
killed outright), its lock was stale. A lock still held by a run of this same controller host whose
process is gone (its holder outlived it) is taken over too: its holder is killed, and that is said.
A lock held by a live run, or by another controller's run, is never taken unless the user asks
(``--fabric-lock=take``). Each user has a directory of their own (another user's lock file cannot be
written, in a sticky /tmp not even opened for writing); a run also tries a shared lock on every
other user's ``cluster.lock`` there, so another user's live run stops it too.

Only this module knows the shell; it runs through :class:`~pytest_fabric.run.cluster.NodeHandle`.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.owner import process_start as _process_start
from pytest_fabric.transport.base import BackgroundProcess, TransportError
from pytest_fabric.transport.shellcmd import fill

__all__ = ["BASE", "LEASE_S", "ClusterLock", "LockHolder", "LockRefused", "Mode", "NodeLock", "holder_command",
           "parse_holder", "release_command", "status_command", "take_cluster"]

#: the node's lock directory is this followed by ``-<uid>``
BASE = "/tmp/pytest-fabric"
#: the longest a run holds a node (its holder is ended by the transport after this at the latest)
LEASE_S = 7 * 24 * 3600
#: how long one status command polls on the node for the holder to have written its line
_POLL_S = 0.5
_HELD = "@@held"
_BUSY = "@@busy"
_STALE = "@@stale"
_BAD = "@@bad"
_OWNER = "@@owner"

Mode = Literal["stop", "wait", "take", "off"]


@dataclass(frozen=True)
class LockHolder:
    """Whose a node's lock is, from its line (fields it lacks are empty or 0)."""

    run: str
    controller: str
    pid: int
    pidstart: str
    started: int
    holder: int = 0
    since: int = 0

    @classmethod
    def parse(cls, text: str) -> LockHolder | None:
        fields = dict(part.split("=", 1) for part in text.split() if "=" in part)
        try:
            return cls(fields["run"], fields.get("controller", ""), int(fields.get("pid", "0") or 0),
                       fields.get("pidstart", ""), int(fields.get("started", "0") or 0),
                       int(fields.get("holder", "0") or 0), int(fields.get("since", "0") or 0))
        except (KeyError, ValueError):
            return None

    def line(self) -> str:
        """The fields the controller writes (the node adds ``holder`` and ``since``)."""
        return f"run={self.run} controller={self.controller} pid={self.pid} pidstart={self.pidstart} started={self.started}"

    def describe(self) -> str:
        """``run 3f2a... (controller ctl01, pid 4242, since 2026-12-03 04:01:02 UTC)``."""
        since = self.since or self.started
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since)) if since else "an unknown time"
        return f"run {self.run} (controller {self.controller or '?'}, pid {self.pid or '?'}, since {when})"


def this_run(run_id: str) -> LockHolder:
    """This controller process as a lock's holder (the run id is the one its storage directories carry)."""
    pid = os.getpid()
    return LockHolder(run_id, platform.node(), pid, _process_start(pid), int(time.time()))


def gone(holder: LockHolder, controller: str | None = None) -> bool:
    """Whether ``holder``'s run has certainly ended: it ran on this controller host and its process is
    gone (the PID runs no more, or runs another program). Another host's run cannot be told from here."""
    if holder.controller != (controller or platform.node()) or holder.pid <= 0:
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # someone else's process: it runs
    return bool(holder.pidstart) and _process_start(holder.pid) not in ("", holder.pidstart)


def _paths(base: str) -> str:
    # The uid is the node's: the same user may have another uid there than on the controller.
    return fill('d={base}-$(id -u); f="$d/cluster.lock"; ', base=base)


def holder_command(run: LockHolder, *, base: str = BASE, take: bool = False) -> str:
    """The background command that takes and holds the node's lock for ``run``.

    It prints ``@@busy <line>`` and exits 75 when another run holds it (unless ``take``: then that
    run's holder is killed first, only if it still holds this very file), ``@@stale <line>`` when it
    took a lock a gone run had written, ``@@bad <why>`` and exits 3 when the directory is not the
    user's own; then it writes its line and holds the lock until it is stopped, or until the process
    that started it (the SSH session) is gone.
    """
    kill = ""
    if take:
        kill = (
            'h=$(sed -n "s/.* holder=\\([0-9][0-9]*\\).*/\\1/p" "$f" | head -n 1); '
            'if [ -n "$h" ] && [ "$(readlink "/proc/$h/fd/9" 2>/dev/null)" = "$(readlink -f "$f")" ]; then '
            'g=$(ps -o pgid= -p "$h" | tr -d " "); kill -TERM -- "-${{g:-$h}}" 2>/dev/null || kill -TERM "$h"; fi; '
            'flock -w 15 9 || '
        )
    return _paths(base) + fill(
        'mkdir -p -m 755 "$d" 2>/dev/null; '
        'if [ -L "$d" ] || [ ! -O "$d" ]; then echo "' + _BAD + ' $d is not a directory of this user\'s own"; exit 3; fi; '
        'exec 9<>"$f" || {{ echo "' + _BAD + ' cannot open $f"; exit 3; }}; '
        'if ! flock -n 9; then ' + kill + '{{ echo "' + _BUSY + ' $(head -c 512 "$f" | head -n 1)"; exit 75; }}; fi; '
        'p=$(head -c 512 "$f" | head -n 1); '
        # another user's live run: a shared lock on their file cannot be had while they hold it
        'for o in {base}-*/cluster.lock; do [ "$o" = "$f" ] || [ ! -r "$o" ] && continue; '
        'if ! ( exec 8<"$o" && flock -n -s 8 ); then echo "' + _BUSY + ' $(head -c 512 "$o" | head -n 1)"; exit 75; fi; '
        'done; '
        # the line it replaces, kept as a second line: a run that ended cleanly emptied its own
        'printf "%s holder=%s since=%s\\n" {line} $$ "$(date +%s)" > "$f"; '
        '[ -n "$p" ] && printf "was %s\\n" "$p" >> "$f"; '
        'echo "' + _HELD + '"; '
        # the process that started the holder's timeout(1): the SSH session, gone when its connection is
        'w=$(ps -o ppid= -p "$PPID" 2>/dev/null | tr -d " "); '
        'while sleep 2; do if [ -n "$w" ] && [ "$w" -gt 1 ] && ! kill -0 "$w" 2>/dev/null; then exit 0; fi; done',
        base=base, line=run.line(),
    )


def status_command(run: LockHolder, *, base: str = BASE, poll_s: float = _POLL_S) -> str:
    """Poll the node (about ``poll_s``) until the lock file names ``run``: print ``@@held`` (and ``@@stale
    <line>``: the gone run's line the holder replaced); else ``@@owner <line>``."""
    tries = max(1, round(poll_s / 0.1))
    return _paths(base) + fill(
        'i=0; while [ "$i" -lt {tries} ]; do if head -n 1 "$f" 2>/dev/null | grep -qs -- {mine}; then '
        'echo "' + _HELD + '"; sed -n "2s/^was /' + _STALE + ' /p" "$f"; exit 0; fi; '
        'i=$((i + 1)); sleep 0.1; done; echo "' + _OWNER + ' $(head -c 512 "$f" 2>/dev/null | head -n 1)"',
        tries=str(tries), mine=f"run={run.run} ",
    )


def release_command(run: LockHolder, *, base: str = BASE) -> str:
    """Empty the lock's line if it is still ``run``'s and nobody holds the lock (its holder was stopped)."""
    return _paths(base) + fill(
        '[ -f "$f" ] || exit 0; exec 9<"$f" || exit 0; '
        'if flock -w 5 9 && grep -qs -- {mine} "$f"; then : > "$f"; fi; true', mine=f"run={run.run} ")


@dataclass(frozen=True)
class HolderOutput:
    """What a holder that ended printed: who holds the lock, a stale line it found, or why it could not."""

    busy: LockHolder | None = None
    busy_text: str = ""
    stale: LockHolder | None = None
    bad: str = ""
    held: bool = False


def parse_holder(stdout: str) -> HolderOutput:
    """Read a holder's output (pure)."""
    busy: LockHolder | None = None
    busy_text = ""
    stale: LockHolder | None = None
    bad = ""
    held = False
    for line in stdout.splitlines():
        if line.startswith(_BUSY):
            busy_text = line[len(_BUSY):].strip()
            busy = LockHolder.parse(busy_text)
        elif line.startswith(_STALE):
            stale = LockHolder.parse(line[len(_STALE):])
        elif line.startswith(_BAD):
            bad = line[len(_BAD):].strip()
        elif line.strip() == _HELD:
            held = True
    return HolderOutput(busy, busy_text, stale, bad, held)


@dataclass
class NodeLock:
    """One node's lock as this run took it (or could not)."""

    node: str
    process: BackgroundProcess | None = None
    #: the run that held it before (gone: its line was stale), said once taken
    took_over: LockHolder | None = None
    #: why it was taken over: its holder was gone, or its controller process here was
    took_over_why: str = ""
    #: the run that holds it (this run stops or waits)
    busy: LockHolder | None = None
    busy_text: str = ""
    #: the node could not be asked (unreachable, or no flock): its own checks say so
    error: str = ""


class LockRefused(Exception):
    """Another run holds some of the nodes: the message names it, per node, and what to do."""

    def __init__(self, busy: Sequence[NodeLock], mode: Mode, waited_s: float = 0.0) -> None:
        self.busy = list(busy)
        by_run: dict[str, list[str]] = {}
        text: dict[str, str] = {}
        for lock in self.busy:
            key = lock.busy.run if lock.busy else lock.busy_text or "an unknown run"
            by_run.setdefault(key, []).append(lock.node)
            text[key] = lock.busy.describe() if lock.busy else (f"a run whose lock reads {lock.busy_text!r}"
                                                                 if lock.busy_text else "a run that wrote no line yet")
        held = "; ".join(f"{', '.join(nodes)}: held by {text[key]}" for key, nodes in by_run.items())
        waited = f" (waited {waited_s:.0f} s)" if waited_s else ""
        super().__init__(
            f"another run holds these nodes{waited}: {held}. Two runs on the same nodes measure each other's "
            "traffic and share their servers' ports, and each would send back healthy nodes. Wait for it "
            "(--fabric-lock=wait), stop it, or, if it is gone and its controller was another host, take its "
            "lock (--fabric-lock=take); --fabric-lock=off runs without the lock (its figures then are not to "
            "be trusted)"
        )


@dataclass
class ClusterLock:
    """The locks this run holds; :meth:`release` gives them back (the transports' close stops them too)."""

    run: LockHolder
    base: str = BASE
    locks: list[NodeLock] = field(default_factory=list)
    #: nodes the lock could not be taken on, and why (the directory is another user's, no flock(1)):
    #: measured unlocked, and said
    unlocked: dict[str, str] = field(default_factory=dict)

    @property
    def taken_over(self) -> list[NodeLock]:
        return [lock for lock in self.locks if lock.took_over is not None]

    def notes(self) -> list[str]:
        """What the terminal says of stale locks taken over: one line per gone run."""
        by_run: dict[str, tuple[LockHolder, str, list[str]]] = {}
        for lock in self.taken_over:
            assert lock.took_over is not None
            by_run.setdefault(lock.took_over.run, (lock.took_over, lock.took_over_why, []))[2].append(lock.node)
        return [f"cluster lock: took over the stale lock of {holder.describe()} on {', '.join(nodes)}: {why}"
                for holder, why, nodes in by_run.values()] + [
            f"cluster lock: not taken on {node} (measured without it): {why}" for node, why in self.unlocked.items()]

    def release(self, nodes: Callable[[str], NodeHandle]) -> None:
        """Stop every holder and empty the lines still this run's; never raises."""
        for lock in self.locks:
            if lock.process is None:
                continue
            try:
                lock.process.stop()
                nodes(lock.node).run(release_command(self.run, base=self.base), timeout=15, check=False, cleanup=True)
            except Exception:  # noqa: BLE001 - a node gone at the end keeps a line no holder backs: the next run says so
                pass


def _take_one(node: NodeHandle, run: LockHolder, base: str, take: bool, deadline_s: float) -> NodeLock:
    """Start the holder on ``node`` and wait until it holds the lock or has ended saying why not."""
    lock = NodeLock(node.name)
    try:
        process = node.start(holder_command(run, base=base, take=take), timeout=LEASE_S)
    except TransportError as exc:
        lock.error = str(exc)
        return lock
    deadline = time.monotonic() + deadline_s
    while True:
        if not process.is_running():
            result = process.stop()
            out = parse_holder(result.stdout)
            lock.busy, lock.busy_text = out.busy, out.busy_text
            if out.busy is None and not out.busy_text:
                lock.error = out.bad or (f"the lock holder ended (exit {result.exit_code}) without taking the lock: "
                                         f"{(result.stderr or result.stdout).strip()[-300:]}")
            return lock
        try:
            status = node.run(status_command(run, base=base), timeout=30, check=False)
        except TransportError as exc:
            process.stop()
            lock.error = str(exc)
            return lock
        out = parse_holder(status.stdout)
        if out.held:
            lock.process = process
            if out.stale is not None:
                lock.took_over, lock.took_over_why = out.stale, "its holder was gone (the run ended without giving it back)"
            return lock
        if time.monotonic() > deadline:
            process.stop()
            lock.error = f"the lock holder neither took the lock nor ended in {deadline_s:g} s"
            return lock


def take_cluster(
    nodes: Sequence[NodeHandle],
    run: LockHolder,
    *,
    mode: Mode = "stop",
    base: str = BASE,
    fan_out: Callable[[Sequence[NodeHandle], Callable[[NodeHandle], NodeLock]], list[NodeLock]] | None = None,
    wait_s: float = 24 * 3600,
    retry_s: float = 10.0,
    say: Callable[[str], None] = lambda _: None,
) -> ClusterLock:
    """Lock every node for ``run``; raise :class:`LockRefused` when another run holds any (``stop``), or
    after ``wait_s`` of waiting for it (``wait``). A node that cannot be asked is left to its own checks.

    ``take``: a lock held by another run is taken (its holder killed), as is, in every mode, one whose
    run was on this controller host and is gone. On refusal the locks taken are given back.
    """
    def each(items: Sequence[NodeHandle], fn: Callable[[NodeHandle], NodeLock]) -> list[NodeLock]:
        return fan_out(items, fn) if fan_out is not None else [fn(n) for n in items]

    by_name = {n.name: n for n in nodes}
    taken = ClusterLock(run, base)
    pending = list(nodes)
    started = time.monotonic()
    while True:
        results = each(pending, lambda n: _take_one(n, run, base, mode == "take", 60.0))
        retry = [lock for lock in results if lock.busy is not None and gone(lock.busy)]
        if retry:
            again = {lock.node: lock.busy for lock in retry}
            results = [lock for lock in results if lock.node not in again]
            for lock in each([by_name[name] for name in again], lambda n: _take_one(n, run, base, True, 60.0)):
                if lock.process is not None:
                    lock.took_over = again[lock.node]
                    lock.took_over_why = (f"its controller process {lock.took_over.pid if lock.took_over else '?'} on "
                                          f"{lock.took_over.controller if lock.took_over else '?'} is gone; its holder was stopped")
                results.append(lock)
        busy = [lock for lock in results if lock.process is None and (lock.busy is not None or lock.busy_text)]
        for lock in results:
            if lock.process is not None:
                taken.locks.append(lock)
            elif lock.error:
                taken.unlocked[lock.node] = lock.error
        if not busy:
            break
        waited = time.monotonic() - started
        if mode != "wait" or waited + retry_s > wait_s:
            taken.release(lambda name: by_name[name])
            raise LockRefused(busy, mode, waited if mode == "wait" else 0.0)
        say(str(LockRefused(busy, mode)).split(". Two runs", 1)[0] + f": waiting (retrying every {retry_s:g} s)")
        time.sleep(retry_s)
        pending = [by_name[lock.node] for lock in busy]
    return taken
