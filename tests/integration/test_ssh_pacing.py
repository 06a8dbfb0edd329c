"""Many connections at once to one sshd that drops connections past a low MaxStartups.

sshd's MaxStartups (10:30:100 by default) drops new connections while that many are still
unauthenticated. A controller that opens hundreds of connections at once (one per node, and more
where a node's sessions overflow, or all through one bastion) meets it; OpenSSH's own client only
fails. The transport paces how many handshakes it has in flight per sshd and retries a connection
dropped before the banner with backoff, so every connection gets through.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_sshd import LoopbackSshd, sshd_unavailable

from pytest_fabric.transport.base import TransportError
from pytest_fabric.transport.ssh import SSHSettings, SSHTransport

CONNECTIONS = 64


@pytest.fixture(scope="module")
def strict_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    why = sshd_unavailable()
    if why:
        pytest.skip(why)
    # 2 unauthenticated at once, then every further one dropped (rate 100 %)
    server = LoopbackSshd(tmp_path_factory.mktemp("sshd-startups"), max_startups="2:100:2").start()
    yield server
    server.stop()


def _settings(sshd: LoopbackSshd, tmp_path: Path) -> SSHSettings:
    """The loopback sshd, its host key known, no user ssh_config."""
    known = tmp_path / "known_hosts"
    known.write_text(sshd.known_hosts_line())
    config = tmp_path / "ssh_config"
    config.write_text("")
    return SSHSettings(host="127.0.0.1", port=sshd.port, user=sshd.user, identity_file=sshd.client_key,
                       known_hosts=known, connect_timeout=5.0, ssh_config=config)


def test_many_concurrent_connects_all_get_through_a_low_max_startups(
    strict_sshd: LoopbackSshd, tmp_path: Path
) -> None:
    settings = _settings(strict_sshd, tmp_path)
    transports = [SSHTransport(f"node{i:02d}", settings) for i in range(CONNECTIONS)]
    errors: dict[str, str] = {}
    outputs: dict[str, str] = {}
    start = threading.Barrier(CONNECTIONS)

    def connect(transport: SSHTransport) -> None:
        start.wait()
        try:
            transport.connect()
            outputs[transport.node] = "connected"
        except TransportError as exc:
            errors[transport.node] = str(exc)

    threads = [threading.Thread(target=connect, args=(t,)) for t in transports]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        for transport in transports:
            transport.close()
    assert errors == {}
    assert len(outputs) == CONNECTIONS


def test_a_connections_reader_wakes_once_a_second_not_ten_times(
    strict_sshd: LoopbackSshd, tmp_path: Path
) -> None:
    """paramiko's reader thread polls its socket to see whether to stop; 512 at 0.1 s cost a sixth of a core."""
    transport = SSHTransport("node01", _settings(strict_sshd, tmp_path))
    try:
        assert transport.run("echo up", timeout=10).stdout == "up\n"
        assert transport.connection.transport.sock.gettimeout() == 1.0
    finally:
        started = time.monotonic()
        transport.close()
        assert time.monotonic() - started < 0.5  # close does not wait for the reader's next wake
