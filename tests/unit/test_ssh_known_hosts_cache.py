"""known_hosts is parsed once per version of the file, not once per connection (512 nodes read a
512-line file 512 times), and a client gets only its host's keys."""

from __future__ import annotations

from pathlib import Path

import paramiko
import pytest

from pytest_fabric.transport.ssh import hostkeys
from pytest_fabric.transport.ssh.hostkeys import configure_client


@pytest.fixture
def known_hosts(tmp_path: Path) -> Path:
    path = tmp_path / "known_hosts"
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    path.write_text("".join(f"10.1.0.{i} ssh-ed25519 {blob}\n" for i in range(1, 101)))
    return path


def _configure(path: Path, host: str) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    configure_client(client, node="n", policy="strict", known_hosts=path, host=host, port=22)
    return client


def test_the_file_is_parsed_once_for_many_clients(
    known_hosts: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    real = hostkeys.parse_known_hosts

    def counting(text: str) -> object:
        loads.append(text)
        return real(text)

    monkeypatch.setattr(hostkeys, "parse_known_hosts", counting)
    hostkeys._PARSED.clear()
    clients = [_configure(known_hosts, f"10.1.0.{i}") for i in range(1, 51)]
    assert loads == [known_hosts.read_text()]
    # each client holds its own host's key only
    assert [list(c.get_host_keys().keys()) for c in clients[:2]] == [["10.1.0.1"], ["10.1.0.2"]]


def test_a_changed_file_is_read_again(known_hosts: Path) -> None:
    hostkeys._PARSED.clear()
    assert _configure(known_hosts, "10.9.9.9").get_host_keys().lookup("10.9.9.9") is None
    blob = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    with known_hosts.open("a") as handle:
        handle.write(f"10.9.9.9 ssh-ed25519 {blob}\n")
    assert _configure(known_hosts, "10.9.9.9").get_host_keys().lookup("10.9.9.9") is not None
