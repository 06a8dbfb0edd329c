"""The host-key lines of the terminal summary, and the log they are read from."""

from __future__ import annotations

from pytest_fabric.report.trust import host_key_lines
from pytest_fabric.transport.results import HostKeyDecision, HostKeyLog


def _d(node: str, decision: str, policy: str = "accept-new", fp: str = "SHA256:new", expected: str | None = None,
       path: str = "/root/.ssh/known_hosts") -> HostKeyDecision:
    return HostKeyDecision(node, f"10.0.0.{node[-1]}", decision, policy, "ssh-ed25519", fp + node, path, expected)


def test_decisions_are_folded_by_kind_and_file() -> None:
    log = HostKeyLog()
    for node in ("nu1", "nu2", "nu3"):
        log.add(_d(node, "accepted new"))
    log.add(_d("nu1", "verified"))  # the reconnect: nothing new
    log.add(_d("nu4", "verified", fp="SHA256:old"))
    assert host_key_lines("accept-new", log.to_json()) == [
        "host keys (accept-new): verified against /root/.ssh/known_hosts: nu4",
        "host keys (accept-new): accepted new, appended to /root/.ssh/known_hosts: nu[1-3]",
    ]


def test_a_changed_key_names_both_fingerprints() -> None:
    log = HostKeyLog()
    log.add(_d("nu2", "accepted changed", policy="ignore", fp="SHA256:now", expected="SHA256:before"))
    log.add(_d("nu3", "accepted unknown", policy="ignore", fp="SHA256:x"))
    assert host_key_lines("ignore", log.to_json()) == [
        "host keys (ignore): ACCEPTED CHANGED (differs from /root/.ssh/known_hosts): nu2",
        "    nu2: 10.0.0.2 presents ssh-ed25519 SHA256:nownu2, the file has SHA256:before",
        "host keys (ignore): accepted unknown, not saved (not in /root/.ssh/known_hosts): nu3",
    ]
