"""judge/soak.py: a soak judged over time (issue 31). Pure: figures and samples in, a verdict out."""

from __future__ import annotations

from pytest_fabric.judge.soak import Figure, Sample, judge_soak, spread

STARTED = 1_800_000_000.0  # 2027-01-15T08:00:00Z


def _fig(cycle: int, value: float | None, outcome: str = "passed", *, subject: str = "n1<->n2",
         higher: bool = True, at: float | None = None) -> Figure:
    return Figure(cycle=cycle, at=at if at is not None else cycle * 60.0, nodeid=f"t[{subject}]",
                  key="inter_node.tcp_throughput", subject=subject, nodes=tuple(subject.split("<->")),
                  outcome=outcome, value=value, unit="Gb/s", higher_is_better=higher,
                  message="measured" if outcome != "passed" else "")


def test_every_cycle_passing_and_steady_accepts() -> None:
    figures = [_fig(k, v) for k, v in enumerate([10.0, 9.8, 10.1, 9.9], start=1)]
    verdict = judge_soak(figures, cycles=4, started=STARTED, max_drift=0.1)
    assert verdict.verdict == "accept"
    assert verdict.faults == ()
    assert abs(verdict.spreads["t[n1<->n2]"] - (10.1 - 9.8) / 10.1) < 1e-9


def test_a_figure_drifting_down_15_percent_fails_above_its_floor_naming_cycle_and_time() -> None:
    # cycles 1 and 2 at 10 Gb/s, then 8.5 (15% down) though every cycle passed its floor
    figures = [_fig(1, 10.0), _fig(2, 10.0), _fig(3, 8.5), _fig(4, 8.4)]
    verdict = judge_soak(figures, cycles=4, started=STARTED, max_drift=0.10)
    assert verdict.verdict == "reject"
    (fault,) = verdict.faults
    assert (fault.kind, fault.cycle, fault.at) == ("drift", 3, 180.0)
    assert fault.when == "2027-01-15T08:03:00+00:00"
    assert "cycle 3" in fault.message and "+3m00s" in fault.message and "15.0%" in fault.message
    assert verdict.nodes_at_fault == ["n1", "n2"]


def test_drift_is_not_judged_without_max_drift_and_within_it_passes() -> None:
    figures = [_fig(1, 10.0), _fig(2, 8.5)]
    assert judge_soak(figures, cycles=2, started=STARTED).verdict == "accept"
    assert judge_soak(figures, cycles=2, started=STARTED, max_drift=0.2).verdict == "accept"


def test_improving_figures_are_no_drift_and_ceilings_drift_upwards() -> None:
    rising = [_fig(1, 7.0), _fig(2, 10.0)]
    assert judge_soak(rising, cycles=2, started=STARTED, max_drift=0.1).verdict == "accept"
    latency = [_fig(1, 2.0, higher=False), _fig(2, 2.1, higher=False), _fig(3, 2.6, higher=False)]
    verdict = judge_soak(latency, cycles=3, started=STARTED, max_drift=0.2)
    assert [(f.kind, f.cycle) for f in verdict.faults] == [("drift", 3)]


def test_a_failure_in_cycle_k_is_named_once_with_k_even_when_later_cycles_pass() -> None:
    figures = [_fig(1, 10.0), _fig(2, 3.0, "failed"), _fig(3, 3.1, "failed"), _fig(4, 10.0)]
    verdict = judge_soak(figures, cycles=4, started=STARTED)
    assert verdict.verdict == "reject"
    assert [(f.kind, f.cycle) for f in verdict.faults] == [("failed", 2)]
    assert "failed in cycle 2 (+2m00s, 2027-01-15T08:02:00+00:00)" in verdict.faults[0].message


def test_an_error_makes_the_soak_incomplete_not_failed() -> None:
    verdict = judge_soak([_fig(1, 10.0), _fig(2, None, "error")], cycles=2, started=STARTED, max_drift=0.1)
    assert verdict.verdict == "incomplete"
    assert [(f.kind, f.cycle) for f in verdict.faults] == [("errored", 2)]
    assert verdict.nodes_at_fault == []


def test_no_complete_cycle_is_no_accept() -> None:
    assert judge_soak([], cycles=0, started=STARTED).verdict == "incomplete"


def test_telemetry_counter_growth_state_change_and_flag_are_faults_from_their_first_sample() -> None:
    samples = [
        Sample(0, "n1", "gpu0 temperature", 60, "C"), Sample(30, "n1", "gpu0 temperature", 90, "C"),
        Sample(0, "n1", "gpu0 ecc uncorrected", 0, kind="counter"),
        Sample(30, "n1", "gpu0 ecc uncorrected", 2, kind="counter"),
        Sample(40, "n1", "gpu0 ecc uncorrected", 3, kind="counter"),
        Sample(0, "n2", "eth0 state", 1, kind="state", text="up"),
        Sample(20, "n2", "eth0 state", 0, kind="state", text="down"),
        Sample(0, "n2", "gpu0 throttled", 0, kind="flag"),
        Sample(10, "n2", "gpu0 throttled", 1, kind="flag", text="hw thermal slowdown"),
    ]
    verdict = judge_soak([_fig(1, 10.0)], samples, cycles=1, started=STARTED)
    assert verdict.verdict == "reject"
    assert [(f.kind, f.subject, f.at) for f in verdict.faults] == [
        ("flag", "n2", 10), ("state", "n2", 20), ("counter", "n1", 30)]
    assert "changed from up to down" in verdict.faults[1].message
    assert "grew from 0 to 2" in verdict.faults[2].message
    assert verdict.nodes_at_fault == ["n1", "n2"]


def test_spread_of_too_few_values_or_a_zero_best_is_none() -> None:
    assert spread([1.0]) is None
    assert spread([0.0, 0.0]) is None
    assert spread([2.0, 3.0], higher_is_better=False) == 0.5


def test_a_telemetry_fault_is_placed_during_or_after_a_cycle() -> None:
    samples = [Sample(0, "n1", "gpu0 throttled", 0, kind="flag"), Sample(25, "n1", "gpu0 throttled", 1, kind="flag"),
               Sample(0, "n2", "eth0 state", 1, kind="state", text="up"),
               Sample(12, "n2", "eth0 state", 0, kind="state", text="down")]
    spans = [(1, 0.0, 10.0), (2, 10.0, 20.0), (3, 30.0, None)]
    verdict = judge_soak([], samples, cycles=2, started=STARTED, spans=spans)
    assert [(f.subject, f.cycle) for f in verdict.faults] == [("n2", 2), ("n1", 2)]
    assert "(during cycle 2, +0m12s" in verdict.faults[0].message
    assert "(after cycle 2, +0m25s" in verdict.faults[1].message
