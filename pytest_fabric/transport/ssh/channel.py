"""Read one exec channel to the end: stdout, stderr and the exit status, under a deadline.

We read paramiko channels directly instead of through Fabric's ``Connection.run``:
invoke's runner starts threads per command, polls with sleeps and handles a
local stdin we never use, which costs milliseconds per command, and it cannot
tell "the node went away" from "the command failed".  Waiting on the channel's
own file descriptor wakes us the moment data, EOF or the exit status arrives.
"""

from __future__ import annotations

import selectors
import time
from collections.abc import Callable

import paramiko

__all__ = ["CHUNK", "LOST", "exit_code_of", "pump"]

CHUNK = 65536
# exit_code_of() answers this when the channel ended without an exit status.
LOST = None


def _drain(
    chan: paramiko.Channel, on_stdout: Callable[[bytes], None], on_stderr: Callable[[bytes], None]
) -> None:
    while chan.recv_ready():
        on_stdout(chan.recv(CHUNK))
    while chan.recv_stderr_ready():
        on_stderr(chan.recv_stderr(CHUNK))


def pump(
    chan: paramiko.Channel,
    deadline: float,
    on_stdout: Callable[[bytes], None],
    on_stderr: Callable[[bytes], None],
) -> bool:
    """Hand everything the command prints to the callbacks until it ends; False if ``deadline`` came first.

    ``deadline`` is a ``time.monotonic()`` value.  The command has ended when the
    server sent EOF and an exit status, or closed the channel (which it also does
    when the connection drops).

    The wait is an epoll selector, not ``select()``: a controller of 512 nodes holds well over
    1,024 descriptors, and ``select()`` cannot wait on one numbered above FD_SETSIZE ("filedescriptor
    out of range in select()").
    """
    with selectors.DefaultSelector() as waiting:
        waiting.register(chan, selectors.EVENT_READ)
        while True:
            _drain(chan, on_stdout, on_stderr)
            if chan.closed or (chan.eof_received and chan.exit_status_ready()):
                _drain(chan, on_stdout, on_stderr)
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            if chan.eof_received:
                # Output is over (its buffers now always look readable); only the status is to come.
                chan.status_event.wait(min(remaining, 1.0))
            else:
                waiting.select(min(remaining, 1.0))


def exit_code_of(chan: paramiko.Channel) -> int | None:
    """The command's exit status, or None when the connection dropped before it was sent.

    OpenSSH sends ``exit-signal`` instead of a status when the remote process was
    killed by a signal; paramiko ignores that message and leaves -1, which we
    report as it is while the connection is still alive.
    """
    transport = chan.get_transport()
    if chan.exit_status == -1 and (transport is None or not transport.is_active()):
        return LOST
    return int(chan.exit_status)
