"""How connect failures read: each exception becomes a typed error with the cause and the fix."""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import paramiko
import pytest

from pytest_fabric.transport import AuthenticationFailed, HostKeyMismatch, NodeUnreachable
from pytest_fabric.transport.ssh.errors import Endpoint, connect_error, lost_error
from pytest_fabric.transport.ssh.hostkeys import entry_lines, known_hosts_name
from pytest_fabric.transport.ssh.transport import _split_hop

EP = Endpoint(
    "gpu01",
    "10.0.0.11",
    22,
    "root",
    identity_files=["/home/me/.ssh/id_ed25519"],
    known_hosts=Path("/home/me/.ssh/known_hosts"),
    connect_timeout=10,
)


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (
            socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
            "cannot resolve host name '10.0.0.11'",
        ),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), "connection refused"),
        (TimeoutError("timed out"), "TCP connect timed out after 10 s"),
        (OSError(errno.EHOSTUNREACH, "No route to host"), "no route to host"),
        (paramiko.SSHException("Error reading SSH protocol banner"), "no SSH banner within 10 s"),
        (
            paramiko.SSHException("No existing session"),
            "SSH handshake did not complete within 20 s",
        ),
        (EOFError(), "the node closed the connection during the SSH handshake"),
        (
            paramiko.SSHException("Incompatible ssh peer"),
            "SSH handshake failed: Incompatible ssh peer",
        ),
    ],
)
def test_unreachable(exc: BaseException, words: str) -> None:
    error = connect_error(EP, exc)
    assert isinstance(error, NodeUnreachable)
    assert str(error).startswith("node gpu01: cannot reach 10.0.0.11:22: ")
    assert words in str(error)
    assert error.fix is not None


def test_authentication() -> None:
    error = connect_error(EP, paramiko.AuthenticationException("Authentication failed."))
    assert isinstance(error, AuthenticationFailed)
    assert "refused user 'root' with /home/me/.ssh/id_ed25519" in str(error)
    assert "ssh-copy-id -i /home/me/.ssh/id_ed25519.pub root@10.0.0.11" in str(error)


def test_changed_host_key_names_file_and_line(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    key_a = paramiko.RSAKey.generate(1024)
    key_b = paramiko.RSAKey.generate(1024)
    hashed = paramiko.HostKeys.hash_host("10.0.0.11")
    known.write_text(
        f"# comment\nother ssh-rsa {key_b.get_base64()}\n{hashed} ssh-rsa {key_a.get_base64()}\n"
    )
    ep = Endpoint(
        "gpu01", "10.0.0.11", 22, "root", identity_files=[], known_hosts=known, connect_timeout=10
    )
    error = connect_error(ep, paramiko.BadHostKeyException("10.0.0.11", key_b, key_a))
    assert isinstance(error, HostKeyMismatch)
    assert f"{known} line 3" in str(error) and f"ssh-keygen -R '10.0.0.11' -f {known}" in str(error)


def test_known_hosts_lookup(tmp_path: Path) -> None:
    known = tmp_path / "kh"
    known.write_text(
        "@cert-authority * ssh-rsa AAAA\n[h]:2222,h2 ssh-ed25519 AAAA\nh ssh-ed25519 AAAA\n"
    )
    assert known_hosts_name("h", 2222) == "[h]:2222" and known_hosts_name("h", 22) == "h"
    assert entry_lines(known, "[h]:2222") == [2] and entry_lines(known, "h") == [3]
    assert entry_lines(tmp_path / "missing", "h") == []


def test_lost_connection_message() -> None:
    error = lost_error("gpu01", "10.0.0.11", 22, "ib_write_bw -d mlx5_0")
    assert "connection to 10.0.0.11:22 was lost" in str(error) and "command: ib_write_bw" in str(
        error
    )


@pytest.mark.parametrize(
    ("spec", "parts"),
    [
        ("bastion", (None, "bastion", None)),
        ("ops@bastion:2222", ("ops", "bastion", 2222)),
        ("[fe80::1]:22", (None, "fe80::1", 22)),
        ("ops@10.0.0.1", ("ops", "10.0.0.1", None)),
    ],
)
def test_jump_spec(spec: str, parts: tuple[str | None, str, int | None]) -> None:
    assert _split_hop(spec) == parts
