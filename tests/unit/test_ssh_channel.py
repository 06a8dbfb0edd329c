"""Reading an exec channel on a controller with more than 1,024 open descriptors (512 nodes' connections)."""

from __future__ import annotations

import os
import resource
import threading
import time
from collections.abc import Iterator

import pytest

from pytest_fabric.transport.ssh.channel import pump


class _PipeChannel:
    """What pump() reads of a paramiko Channel, over a pipe: readable when data arrived."""

    def __init__(self, read_fd: int) -> None:
        self._fd = read_fd
        self.data: list[bytes] = []
        self.closed = False
        self.eof_received = False
        self.status_event = threading.Event()

    def fileno(self) -> int:
        return self._fd

    def recv_ready(self) -> bool:
        return bool(self.data)

    def recv(self, size: int) -> bytes:
        os.read(self._fd, 1)  # the byte that made the pipe readable
        return self.data.pop(0)

    def recv_stderr_ready(self) -> bool:
        return False

    def recv_stderr(self, size: int) -> bytes:  # pragma: no cover - never ready
        return b""

    def exit_status_ready(self) -> bool:
        return self.status_event.is_set()


@pytest.fixture
def many_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1300:
        pytest.skip(f"the hard limit of open files is {hard}: cannot hold more than 1,024")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1300), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_channel_numbered_above_fd_setsize_is_waited_on(many_descriptors: None) -> None:
    # select() raised "ValueError: filedescriptor out of range in select()" here: 354 of 1,024 pairs
    # errored on 512 simulated nodes with that bare Python exception.
    read_fd, write_fd = os.pipe()
    assert read_fd > 1024
    chan = _PipeChannel(read_fd)

    def command() -> None:
        time.sleep(0.2)
        chan.data.append(b"Version: 6.10\n")
        os.write(write_fd, b"x")
        chan.eof_received = True
        chan.status_event.set()

    out: list[bytes] = []
    worker = threading.Thread(target=command)
    worker.start()
    try:
        assert pump(chan, time.monotonic() + 10, out.append, lambda b: None)  # type: ignore[arg-type]
    finally:
        worker.join()
        os.close(read_fd)
        os.close(write_fd)
    assert out == [b"Version: 6.10\n"]
