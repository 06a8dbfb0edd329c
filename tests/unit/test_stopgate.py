"""The one stop every node command passes (pytest_fabric/run/stopgate.py): refused once the run stops,
clean-ups still let through with a short timeout, and what passed before the stop killed until gone."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.run.batches import fan_out
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.run.stopgate import CLEANUP_TIMEOUT_S, RunStopped, StopGate
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool


def _node(gate: StopGate) -> NodeHandle:
    pool = ConnectionPool(lambda name: LocalTransport(name))
    return NodeHandle(Node(name="localhost", host="localhost"), pool, gate)


def test_once_stopped_a_command_is_refused_and_a_cleanup_still_runs_with_a_short_timeout() -> None:
    kills: list[float] = []
    gate = StopGate(lambda: kills.append(time.monotonic()))
    node = _node(gate)
    assert node.run("echo before").stdout == "before\n"
    gate.stop()
    with pytest.raises(RunStopped, match="node localhost: not started: the run was interrupted"):
        node.run("echo after")
    with pytest.raises(RunStopped):
        node.start("sleep 5", timeout=10)
    assert node.run("echo cleanup", cleanup=True).stdout == "cleanup\n"
    assert gate.timeout(120, cleanup=True) == CLEANUP_TIMEOUT_S and gate.timeout(120) == 120
    assert len(kills) == 1  # nothing was running: one kill, no waiting
    gate.close()


def test_stop_kills_again_while_a_command_that_passed_before_it_still_runs() -> None:
    """A command on its way to the node as the first kill ran is killed by the next one."""
    node_box: list[NodeHandle] = []
    kills: list[float] = []

    def kill() -> None:
        kills.append(time.monotonic())
        if len(kills) >= 2:  # the command reached the node only after the first kill
            node_box[0].transport.interrupt()

    gate = StopGate(kill)
    node = _node(gate)
    node_box.append(node)
    started = threading.Event()
    ended: list[object] = []

    def measure() -> None:
        started.set()
        ended.append(node.run("sleep 30", timeout=60, check=False))

    worker = threading.Thread(target=measure)
    worker.start()
    started.wait()
    time.sleep(0.3)
    began = time.monotonic()
    gate.stop()
    worker.join(5)
    assert not worker.is_alive() and len(kills) >= 2
    assert time.monotonic() - began < 5
    gate.close()


def test_ctrl_c_in_a_fan_out_of_turns_ends_it_at_once_and_no_turn_starts_after() -> None:
    """Members that take turns (one node at a time on a shared mount): Ctrl-C in the waiting thread kills the
    running turn and the others are refused, where before they each took their turn after the Ctrl-C."""
    box: list[NodeHandle] = []
    gate = StopGate(lambda: box[0].transport.interrupt())
    node = _node(gate)
    box.append(node)
    turn = threading.Semaphore(1)
    outcomes: list[str] = []

    def one(i: int) -> None:
        with turn:
            try:
                result = node.run(f"sleep 3; echo {i}", timeout=30, check=False)
                outcomes.append(f"ran {result.exit_code}")
            except RunStopped:
                outcomes.append("refused")

    main = threading.get_ident()
    timer = threading.Timer(0.5, lambda: signal.pthread_kill(main, signal.SIGINT))
    began = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            fan_out([1, 2, 3], one, 3)
    finally:
        timer.cancel()
        gate.close()
    took = time.monotonic() - began
    assert took < 3, took  # three turns of 3 s before
    deadline = time.monotonic() + 5
    while len(outcomes) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    # the turn running at Ctrl-C was killed; the two waiting never started
    assert outcomes.count("refused") == 2 and "ran 0" not in outcomes, outcomes
