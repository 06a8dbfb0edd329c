"""The shell lines that make a node enforce our timeouts and report a background PID.

The node must kill an overrunning command itself: if only the client gave up,
the command would keep running (an SSH exec session without a pty sends no
SIGHUP when the channel closes).  coreutils timeout(1) puts itself and the
command in a new process group and signals the whole group on expiry, so the
command's children die with it.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["KILL_AFTER_S", "PID_MARKER", "in_background", "kill_marked", "seconds", "split_pid", "with_timeout"]

# Grace between TERM and KILL, on the node and when we stop a background process.
KILL_AFTER_S = 5.0

PID_MARKER = "__pf_pid="
_PID_LINE = re.compile(rf"^{PID_MARKER}(\d+)\r?\n", re.MULTILINE)


def seconds(value: float) -> str:
    """``value`` as timeout(1) accepts it: plain decimal, never exponent notation."""
    if value <= 0:
        raise ValueError(f"a timeout must be positive, got {value!r}")
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text or "0.001"


def with_timeout(command: str, timeout_s: float, marker: str | None = None) -> str:
    """``command`` run under timeout(1) on the node, in its own process group.

    ``marker`` (a word) becomes the shell's ``$0``, so the command line of timeout(1), which
    leads the group, carries it: :func:`kill_marked` finds the group by it.
    """
    name = f" {shlex.quote(marker)}" if marker else ""
    return f"timeout -k {seconds(KILL_AFTER_S)} {seconds(timeout_s)} sh -c {shlex.quote(command)}{name}"


def kill_marked(marker: str, grace_s: float = 0.5) -> str:
    """A shell line that TERMs, then KILLs, every process group whose leader carries ``marker``.

    The marker is assembled at run time, so this line's own command line does not match it.
    """
    head, tail = marker[:3], marker[3:]
    find = f'm={shlex.quote(head)}; m="$m"{shlex.quote(tail)}; pgrep -f -- "$m"'
    return (
        f"for p in $({find}); do kill -TERM -- -$p 2>/dev/null; done; sleep {seconds(grace_s)}; "
        f"for p in $({find}); do kill -KILL -- -$p 2>/dev/null; kill -KILL $p 2>/dev/null; done; true"
    )


def in_background(command: str, timeout_s: float) -> str:
    """Like :func:`with_timeout`, but first print the PID, which is also the process group id.

    ``exec`` keeps the PID for timeout(1), which then leads the new group, so
    ``kill -- -PID`` later reaches the command and all its children.  The
    command travels as ``$1`` so it needs no second level of quoting.
    """
    inner = (
        f"echo {PID_MARKER}$$; "
        f'exec timeout -k {seconds(KILL_AFTER_S)} {seconds(timeout_s)} sh -c "$1"'
    )
    return f"sh -c {shlex.quote(inner)} _ {shlex.quote(command)}"


def split_pid(stdout: str) -> tuple[int | None, str]:
    """Take the PID line off the front of a background process's output."""
    match = _PID_LINE.search(stdout)
    if match is None or stdout[: match.start()].strip():
        return None, stdout
    return int(match.group(1)), stdout[: match.start()] + stdout[match.end() :]
