"""Once: each (kind, key) computed once, under threads; an error kept for every asker; a skip not kept."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fabric.run.once import Once
from pytest_fabric.transport.base import NodeUnreachable


def test_computed_once_while_many_threads_ask() -> None:
    once, calls, lock = Once(), [], threading.Lock()
    started = threading.Barrier(8)

    def compute() -> str:
        with lock:
            calls.append(1)
        time.sleep(0.1)  # the other askers arrive while it is computed
        return "topology of node01"

    got: list[str] = []

    def ask() -> None:
        started.wait()
        got.append(once.get("topology", "node01", compute))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert got == ["topology of node01"] * 8
    assert len(calls) == 1
    assert once.get("topology", "node01", lambda: "again") == "topology of node01"
    assert once.get("topology", "node02", lambda: "node02's") == "node02's"  # another key computes
    assert once.get("ports", "node01", lambda: "ports") == "ports"  # so does another kind


def test_an_exception_is_kept_and_raised_to_the_second_asker() -> None:
    once, calls = Once(), []

    def compute() -> int:
        calls.append(1)
        raise ValueError("nvidia-smi printed no XML")

    with pytest.raises(ValueError, match="no XML"):
        once.get("gpu inventory", "node01", compute)
    with pytest.raises(ValueError, match="no XML"):
        once.get("gpu inventory", "node01", compute)
    assert len(calls) == 1


def test_a_waiting_asker_gets_the_error_of_the_computation_it_waited_for() -> None:
    once, calls = Once(), []
    computing = threading.Event()

    def compute() -> int:
        calls.append(1)
        computing.set()
        time.sleep(0.1)
        raise ValueError("ibstat failed")

    errors: list[BaseException] = []

    def first() -> None:
        try:
            once.get("ports", "node01", compute)
        except ValueError as exc:
            errors.append(exc)

    runner = threading.Thread(target=first)
    runner.start()
    computing.wait(5)
    with pytest.raises(ValueError, match="ibstat failed"):
        once.get("ports", "node01", compute)
    runner.join(5)
    assert len(errors) == 1 and len(calls) == 1


def test_a_transport_error_is_raised_again_as_its_fresh_copy() -> None:
    once = Once()
    first = NodeUnreachable("node01", "cannot reach node01: connection refused")

    def compute() -> int:
        raise first

    with pytest.raises(NodeUnreachable) as caught:
        once.get("preflight", "node01", compute)
    assert caught.value is first
    with pytest.raises(NodeUnreachable, match="not retried in this run; first failure: cannot reach") as again:
        once.get("preflight", "node01", compute)
    assert again.value is not first


def test_a_skip_is_not_kept_the_next_asker_computes() -> None:
    once, calls = Once(), []

    def compute() -> str:
        calls.append(1)
        if len(calls) == 1:
            pytest.skip("the profile sets neither check")
        return "attribution"

    with pytest.raises(pytest.skip.Exception):
        once.get("attribution", None, compute)
    assert once.peek("attribution", None) is None  # nothing kept
    assert once.get("attribution", None, compute) == "attribution"
    assert len(calls) == 2


def test_keyboard_interrupt_is_not_kept() -> None:
    once, calls = Once(), []

    def compute() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return "read"

    with pytest.raises(KeyboardInterrupt):
        once.get("stack", "node01", compute)
    assert once.get("stack", "node01", compute) == "read"


def test_peek_reads_what_was_computed_and_computes_nothing() -> None:
    once = Once()
    assert once.peek("baseline", "node01") is None
    once.get("baseline", "node01", lambda: {"mlx5_0": 3})
    assert once.peek("baseline", "node01") == {"mlx5_0": 3}

    def fail() -> None:
        raise OSError("perfquery failed")

    with pytest.raises(OSError):
        once.get("baseline", "node02", fail)
    with pytest.raises(OSError, match="perfquery failed"):
        once.peek("baseline", "node02")


def test_asking_for_itself_is_an_error_not_a_deadlock() -> None:
    once = Once()

    def compute() -> int:
        return once.get("loop", 1, compute)

    with pytest.raises(RuntimeError, match="asks for itself"):
        once.get("loop", 1, compute)
