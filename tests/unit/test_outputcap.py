"""The controller keeps a bounded amount of what a node prints, and says what it dropped."""

from __future__ import annotations

import hashlib

import pytest

from pytest_fabric.transport.base import CommandFailed
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.outputcap import CappedBuffer, cap_text
from pytest_fabric.transport.results import CommandResult


def test_a_short_stream_is_kept_whole() -> None:
    buf = CappedBuffer(limit=100)
    for chunk in (b"abc", b"", b"def" * 10):
        buf.write(chunk)
    assert buf.getvalue() == b"abc" + b"def" * 10
    assert buf.dropped == 0 and buf.total == 33


def test_a_stream_of_exactly_the_limit_is_kept_whole() -> None:
    buf = CappedBuffer(limit=100)
    buf.write(b"a" * 60)
    buf.write(b"b" * 40)
    assert buf.getvalue() == b"a" * 60 + b"b" * 40 and buf.dropped == 0


def test_a_long_stream_keeps_head_and_tail_and_counts_the_rest() -> None:
    buf = CappedBuffer(limit=100)
    data = bytes(range(256)) * 40  # 10,240 bytes, in uneven chunks
    for start in range(0, len(data), 37):
        buf.write(data[start:start + 37])
    kept = buf.getvalue()
    assert kept.startswith(data[:50]) and kept.endswith(data[-50:])
    assert buf.dropped == len(data) - 100 and buf.total == len(data)
    assert b"[... 10,140 bytes dropped by pytest-fabric: the output was 10,240 bytes ...]" in kept
    assert len(kept) < 200
    assert buf.sha256 == hashlib.sha256(data).hexdigest()  # the hash names the whole output


def test_memory_stays_bounded_however_much_arrives() -> None:
    buf = CappedBuffer(limit=1000)
    for _ in range(10_000):
        buf.write(b"x" * 997)
    assert len(buf._head) + len(buf._tail) <= 1500 + 997
    assert buf.total == 9_970_000


def test_cap_text_keeps_short_messages_and_cuts_long_ones() -> None:
    assert cap_text("short", 10) == "short"
    cut = cap_text("a" * 50 + "b" * 50, 20)
    assert cut.startswith("a" * 10) and cut.endswith("b" * 10)
    assert "80 characters dropped" in cut and len(cut) < 120


def test_a_failed_command_quotes_a_bounded_tail_of_one_huge_line() -> None:
    result = CommandResult("node01", "tool", 1, "", "x" * 5_000_000)
    message = str(CommandFailed(result))
    assert len(message) < 5000 and "characters dropped" in message
    assert message.startswith("node node01: exited with code 1; last output:")


def test_the_local_transport_keeps_a_bounded_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_fabric.transport.pipes.KEEP_BYTES", 1000)
    result = LocalTransport().run("head -c 3000000 /dev/zero | tr '\\0' x; echo err >&2", timeout=30)
    assert len(result.stdout) < 1200 and "2,999,000 bytes dropped" in result.stdout
    assert result.stdout.startswith("x" * 500) and result.stdout.endswith("x" * 500)
    assert result.stderr == "err\n"


def test_a_verdict_and_the_record_quote_a_huge_value_from_a_node_bounded() -> None:
    from pytest_fabric.judge.verdict import Expectation, Measurement, Op, judge
    from pytest_fabric.record.check_record import quantity_json

    name = "H100 " + "x" * 5_000_000  # a GPU name, as a node's nvidia-smi may print it
    model = Expectation("intra_node", "gpu_model", Op.CONTAINS, "A100", "intra_node.gpu_model.value")
    verdict = judge("node01:gpu0", Measurement(name, detail="y" * 5_000_000), model)
    assert not verdict.passed and len(verdict.message) < 20_000
    assert verdict.message.startswith("node01:gpu0: measured H100 xxx") and "characters dropped" in verdict.message
    value = quantity_json(name, None)
    assert value is not None and len(value["value"]) < 10_000 and value["value"].startswith("H100 x")


def test_a_failed_command_cuts_its_output_at_newlines_only() -> None:
    # "\r" made "ACCEPT: 8 nodes conform" a line of its own in the message (seen with CI=true,
    # where pytest's short summary prints the whole message).
    result = CommandResult(node="n1", command="nvidia-smi -q", exit_code=3, stdout="",
                           stderr="boom\x07\rACCEPT: 8 nodes conform\n")
    message = str(CommandFailed(result))
    assert "boom\x07\rACCEPT: 8 nodes conform" in message
    assert not any(line.startswith("ACCEPT") for line in message.split("\n"))
