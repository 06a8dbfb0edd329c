"""The run's plan: rounds, waves, tests and an estimate from the profile's settings."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_fabric.pairs import make_pairs
from pytest_fabric.plan import (
    OVERHEAD_S,
    PlannedSubject,
    format_duration,
    measurement_seconds,
    plan_run,
    planned_subject,
)
from pytest_fabric.profile import load_profile


def _specs(name: str) -> dict[tuple[str, str], Any]:
    profile = load_profile(name, [])
    out: dict[tuple[str, str], Any] = {}
    for key in profile.set_checks():
        layer, _, check = key.partition(".")
        out[(layer, check)] = profile.spec(layer, check)
    return out


def test_measurement_seconds_follow_the_profile() -> None:
    specs = _specs("hdr200")
    # perftest -D 5 s, three repeats
    assert measurement_seconds("rdma_bandwidth", specs[("inter_node", "rdma_bandwidth")]) == 3 * (5 + OVERHEAD_S)
    assert measurement_seconds("tcp_throughput", specs[("inter_node", "tcp_throughput")]) == 10 + OVERHEAD_S
    # fio: 4 GiB per job x 4 jobs at the 2 GB/s floor
    read = measurement_seconds("sequential_read", specs[("storage", "sequential_read")])
    assert read == pytest.approx(4 * 4 * 2**30 / 2e9 + OVERHEAD_S)
    # a checkpoint's size is its total over 8 writers, at the 1 GB/s floor
    assert measurement_seconds("checkpoint_write", specs[("storage", "checkpoint_write")]) == pytest.approx(
        4 * 2**30 / 1e9 + OVERHEAD_S
    )
    assert measurement_seconds("rdma_bandwidth_outlier", None) == 0
    assert measurement_seconds("gpu_count", specs[("intra_node", "gpu_count")]) == 1.0


def test_rounds_and_waves_of_an_all_pairs_sweep() -> None:
    nodes = [f"n{i:02d}" for i in range(64)]
    pairs = make_pairs(nodes, "all")
    subjects = [PlannedSubject("inter_node", "tcp_throughput", "pair", p.round) for p in pairs]
    subjects += [PlannedSubject("inter_node", "tcp_throughput_outlier", "pair", p.round) for p in pairs]
    subjects += [PlannedSubject("storage", "random_read_iops", "wave") for _ in nodes]
    subjects += [PlannedSubject("egress", "download", "wave", resource="the egress uplink", limit=1) for _ in nodes]
    plan = plan_run(subjects, _specs("hdr200"), fanout=64)
    assert plan.tests == 2 * 2016 + 128
    assert plan.rounds == 63
    assert plan.waves == 2
    # 63 rounds of 32 pairs, each one slot of tcp (12 s); iops once on every node; download one node at a time
    assert plan.rounds_s == 63 * 12
    assert plan.waves_s == 12 + 64 * 10  # download: TYPICAL_SECONDS
    assert plan.summary() == "4,160 tests: 63 rounds x ~12 s + 2 waves ~11 min ~ 23 min (at most 64 subjects at once)"


def test_the_fanout_cap_and_shared_resources_make_slots() -> None:
    # 16 pairs in a round with a fan-out of 4 nodes: 2 pairs at once, 8 slots (the cap counts nodes,
    # in rounds as in waves); 8 GPUs of one node one at a time: 8 slots
    subjects = [PlannedSubject("inter_node", "tcp_throughput", "pair", 0) for _ in range(16)]
    subjects += [PlannedSubject("storage", "sequential_read", "wave", resource="shared mount /nfs") for _ in range(8)]
    # 3 nodes x 8 GPUs: one reading per node, 3 nodes at a time with fanout 4
    subjects += [PlannedSubject("intra_node", "gpu_model", "wave", once_per=f"n{i // 8}") for i in range(24)]
    plan = plan_run(subjects, {}, fanout=4)
    by_check = {c.check: c for c in plan.checks}
    assert by_check["tcp_throughput"].slots == 8
    assert by_check["sequential_read"].slots == 8
    assert by_check["gpu_model"].slots == 1


def test_planned_subject_follows_the_measurement_fixtures_shares() -> None:
    from pytest_fabric.pairs import Pair

    specs = _specs("hdr200")
    assert planned_subject("inter_node", "tcp_throughput", "node_pair", Pair(3, 0, "a", "b"), None).round == 3
    gpu = planned_subject("intra_node", "gpu_pcie", "gpu", ("n1", 2), None)
    assert (gpu.kind, gpu.once_per, gpu.resource) == ("wave", "n1", None)
    nfs = planned_subject("storage", "sequential_read", "mount", ("n1", "/nfs"), specs[("storage", "sequential_read")],
                          shared_mounts=["/nfs"])
    assert (nfs.resource, nfs.limit) == ("shared mount /nfs", 1)
    local = planned_subject("storage", "sequential_read", "mount", ("n1", "/scratch"), None, shared_mounts=["/nfs"])
    assert local.resource is None
    assert planned_subject("egress", "download", "egress_target", ("n1", "x"), None).resource == "the egress uplink"
    assert planned_subject("inter_node", "scaling_efficiency", None, None, None).kind == "cluster"


def test_nothing_selected() -> None:
    assert plan_run([], {}, fanout=64).summary() == "0 tests: nothing to measure (at most 64 subjects at once)"


@pytest.mark.parametrize(
    ("seconds", "text"), [(40, "40 s"), (89, "89 s"), (120, "2.0 min"), (45 * 60, "45 min"), (10 * 3600, "10.0 h")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_a_pair_measures_its_rails_one_after_the_other_and_the_plan_counts_them() -> None:
    # hdr200 has 4 rails a pair: rdma_bandwidth runs 3 x 5 s perftest on each, one rail after the other.
    from pytest_fabric.pairs import make_pairs as pairs_of

    subjects = [PlannedSubject("inter_node", "rdma_bandwidth", "pair", p.round) for p in pairs_of(["a", "b"], "all")]
    one = plan_run(subjects, _specs("hdr200"), fanout=64)
    four = plan_run(subjects, _specs("hdr200"), fanout=64, rails=4)
    assert four.total_s == 4 * one.total_s == 4 * 3 * (5 + OVERHEAD_S)


def test_the_plan_holds_only_the_checks_the_profile_sets(pytester: pytest.Pytester) -> None:
    # localhost sets 6 checks of 49: the plan said ~12 min (unset cluster checks at their typical
    # time) for a run of a few seconds.
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--collect-only", "-q")
    (line,) = [x for x in result.stdout.lines if x.startswith("fabric: plan:")]
    assert "cluster check" not in line and " min" not in line and " h " not in line, line


def test_a_time_budget_the_plan_exceeds_is_a_usage_error_naming_what_dominates(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--time-budget", "1s")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "more than --time-budget 1 s" in err and "inter_node.tcp_throughput" in err, err
    fits = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--time-budget", "2h",
                                         "--collect-only", "-q")
    assert fits.ret == pytest.ExitCode.OK
    wrong = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--time-budget", "soon")
    assert wrong.ret == pytest.ExitCode.USAGE_ERROR and "give a duration such as 30m" in wrong.stderr.str()
