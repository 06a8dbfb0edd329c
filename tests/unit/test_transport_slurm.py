"""The Slurm transport's pure parts: splitting srun -l output, naming srun's refusals, gathering a wave.

The output samples are what srun 22.05 printed on the simulated Slurm (tests/simcluster/slurm.py);
the integration tests (tests/integration/test_slurm.py) run the real thing.
"""

from __future__ import annotations

import threading
import time

import pytest

from pytest_fabric.transport.base import (
    AuthenticationFailed,
    CommandResult,
    CommandTimeout,
    NodeUnreachable,
    TransportError,
)
from pytest_fabric.transport.gather import Gathering, StepOutcome
from pytest_fabric.transport.slurm.transport import (
    NoAllocation,
    NodeNotAvailable,
    classify_srun_failure,
    split_step_output,
    step_time_limit,
)


def test_output_splits_per_task_and_the_status_line_comes_off() -> None:
    stdout = "0: node01\n2: node03\n1: node02\n1: partial\n"
    stderr = (
        "srun: error: node01: task 0: Exited with exit code 3\n"
        "0: err\n0: \n0: __pf_rc=3 node01\n"
        "2: \n2: __pf_rc=0 node03\n"
        "1: __pf_rc=0 node02\n"
    )
    split = split_step_output(stdout, stderr)
    nodes = split.by_node()
    assert (nodes["node01"].stdout, nodes["node01"].stderr, nodes["node01"].exit_code) == ("node01\n", "err\n", 3)
    assert (nodes["node03"].stderr, nodes["node03"].exit_code) == ("", 0)
    assert nodes["node02"].stdout == "node02\npartial\n"
    assert split.launcher == []  # srun's own note on the exit code is not a message


def test_padded_labels_of_wide_steps_split_too() -> None:
    split = split_step_output(" 0: a\n11: b\n", " 0: \n 0: __pf_rc=0 n1\n11: \n11: __pf_rc=1 n12\n")
    assert {n: (t.stdout, t.exit_code) for n, t in split.by_node().items()} == {"n1": ("a\n", 0), "n12": ("b\n", 1)}


def test_a_task_that_never_reported_has_no_exit_code() -> None:
    split = split_step_output("0: started\n", "srun: error: Task launch for StepId=1.1 failed on node node03: x\n")
    assert split.tasks[0].exit_code is None
    assert split.by_node() == {}
    assert split.launcher == ["srun: error: Task launch for StepId=1.1 failed on node node03: x"]


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        (["srun: error: Unable to create step for job 5: Required node not available (down, drained or reserved)"],
         NodeNotAvailable),
        (["srun: error: Only allocated 2 nodes asked for 3"], NodeNotAvailable),
        (["srun: error: Slurm job 1 has expired"], NoAllocation),
        (["srun: error: Unable to confirm allocation for job 9: Invalid job id specified"], NoAllocation),
        (['srun: error: Munge encode failed: Failed to access "/run/munge/munge.socket.2": No such file or directory',
          "srun: error: Unable to confirm allocation for job 1: Protocol authentication error"], AuthenticationFailed),
        (["slurmstepd: error: *** STEP 12.3 ON node01 CANCELLED AT 2026-12-01T10:00:32 DUE TO TIME LIMIT ***"],
         CommandTimeout),
        (["srun: error: Task launch for StepId=1.1 failed on node node03: Communication connection failure"],
         NodeUnreachable),
    ],
)
def test_srun_refusals_become_typed_errors(messages: list[str], error: type[TransportError]) -> None:
    found = classify_srun_failure("node03", messages, "hostname", 10, "5")
    assert type(found) is error
    assert found.node == "node03"


def test_a_step_time_limit_is_whole_minutes_past_the_node_side_timeout() -> None:
    assert step_time_limit(1) == 1
    assert step_time_limit(60) == 2  # 60 s + 5 s kill grace + 30 s: past one minute
    assert step_time_limit(900) == 16  # 935 s: 15.6 minutes, rounded up


def _recorder() -> tuple[list[tuple[tuple[str, ...], str]], object]:
    launches: list[tuple[tuple[str, ...], str]] = []
    lock = threading.Lock()

    def run_many(nodes: list[str], command: str, timeout: float, check: bool) -> dict[str, StepOutcome]:
        with lock:
            launches.append((tuple(sorted(nodes)), command))
        return {n: CommandResult(n, command, 0, f"{n}\n", "") for n in nodes}

    return launches, run_many


def _members(group: Gathering, commands: dict[str, list[str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {n: [] for n in commands}

    def member(node: str) -> None:
        with group.member(node):
            for command in commands[node]:
                result = group.run(node, command, 5, True)
                assert isinstance(result, CommandResult)
                out[node].append(result.stdout)

    threads = [threading.Thread(target=member, args=(n,)) for n in commands]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return out


def test_identical_commands_of_a_wave_are_one_launch_per_round() -> None:
    launches, run_many = _recorder()
    group = Gathering(["a", "b", "c"], run_many, window_s=5)  # type: ignore[arg-type]
    started = time.monotonic()
    out = _members(group, {n: ["first", "second"] for n in "abc"})
    # Every node asked, so no round waited for its window.
    assert time.monotonic() - started < 2
    assert sorted(launches) == [(("a", "b", "c"), "first"), (("a", "b", "c"), "second")]
    assert out == {n: [f"{n}\n", f"{n}\n"] for n in "abc"}


def test_different_commands_launch_apart_and_a_finished_member_is_not_waited_for() -> None:
    launches, run_many = _recorder()
    group = Gathering(["a", "b", "c"], run_many, window_s=5)  # type: ignore[arg-type]
    started = time.monotonic()
    _members(group, {"a": ["x", "y"], "b": ["x"], "c": ["z"]})
    assert time.monotonic() - started < 2  # b and c left after one command: y did not wait 5 s for them
    assert sorted(launches) == sorted([(("a", "b"), "x"), (("a",), "y"), (("c",), "z")])


def test_a_node_that_never_asks_holds_the_others_only_for_the_window() -> None:
    launches, run_many = _recorder()
    group = Gathering(["a", "b", "late"], run_many, window_s=0.3)  # type: ignore[arg-type]
    started = time.monotonic()
    _members(group, {"a": ["x"], "b": ["x"]})
    assert 0.25 <= time.monotonic() - started < 3
    assert launches == [(("a", "b"), "x")]


def test_the_allocation_takes_its_time_from_the_plan_with_a_margin() -> None:
    from pytest_fabric.transport.slurm.settings import allocation_minutes

    # 120 minutes by default was shorter than many plans: now the plan x 1.5 + 10 minutes.
    assert allocation_minutes(0) == 10
    assert allocation_minutes(45 * 60) == 78
    assert allocation_minutes(11 * 3600) == 1000


def test_a_slurm_time_shorter_than_the_plan_refuses_to_start(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inv="name: s\nslurm: {partition: gpu, nodes: 'n[1-4]', time: 1}\n"
                                   "storage: {mounts: [/tmp]}\negress: {targets: [localhost]}\n")
    pytester.makefile(".yaml", prof="name: long\ninter_node:\n  tcp_throughput: {min: 1 Gb/s, duration: 60 s}\n"
                                    "  pairs: all\n")
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "prof.yaml", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    assert "slurm: time 1 (minutes) is shorter than the run's plan" in result.stderr.str()
