"""Each node's commands reach pytest's logging at DEBUG: command, exit code, time and bytes, never the output.

Through the real local transport (``/bin/sh``): what the SSH transport logs is tested against
the simulated cluster (tests/integration/test_transport_logging.py).
"""

from __future__ import annotations

import logging

import pytest

from pytest_fabric.transport.local import LocalTransport


def test_a_command_is_logged_with_exit_code_time_and_bytes(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="pytest_fabric.transport.node")
    t = LocalTransport("gpu07")
    try:
        # The node prints an ESC sequence that would clear a terminal, and fails.
        t.run("printf 'x\\033[2Jy'; printf err >&2; exit 3", timeout=10, check=False)
    finally:
        t.close()
    (record,) = [r for r in caplog.records if r.name == "pytest_fabric.transport.node.gpu07"]
    assert record.levelno == logging.DEBUG
    message = record.getMessage()
    assert message.startswith(
        "ran \"printf 'x\\\\033[2Jy'; printf err >&2; exit 3\": exit 3 in "
    ), message
    assert message.endswith(" s (stdout 6 bytes, stderr 3 bytes)"), message
    assert "\x1b" not in message  # the node's output is counted, not written


def test_nothing_is_logged_above_debug(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    t = LocalTransport("gpu07")
    try:
        t.run("true", timeout=10)
    finally:
        t.close()
    assert not [r for r in caplog.records if r.name.startswith("pytest_fabric.transport.node")]
