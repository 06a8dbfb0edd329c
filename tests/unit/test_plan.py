"""The run's plan: rounds, waves, tests and an estimate from the profile's settings, built from the
checks' declarations (rails at once or one after the other, retests as an expected share), kept
per phase beside what the run took."""

from __future__ import annotations

from typing import Any

import pytest
from unit.bundled_registry import bundled_registry

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.probes import nccl
from pytest_fabric.run.pairs import make_pairs
from pytest_fabric.run.plan import (
    BATCH_S,
    CONNECT_S,
    NCCL_START_PER_RANK_S,
    NCCL_START_S,
    OVERHEAD_S,
    PER_TEST_S,
    READING_S,
    RETEST_REPEATS,
    RETEST_SHARE,
    TRANSFER_CONNECT_S,
    PlannedSubject,
    allreduce_seconds,
    format_duration,
    layout_seconds,
    measurement_seconds,
    nccl_runs,
    phase_of,
    plan_run,
    planned_subject,
    start_seconds,
)


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
    assert measurement_seconds("tcp_throughput", specs[("inter_node", "tcp_throughput")]) == 10 + start_seconds("tcp_throughput")
    # fio: 4 GiB per job x 4 jobs at the 2 GB/s floor
    read = measurement_seconds("sequential_read", specs[("storage", "sequential_read")])
    assert read == pytest.approx(4 * 4 * 2**30 / 2e9 + OVERHEAD_S)
    # a checkpoint's size is its total over 8 writers, at the 1 GB/s floor
    assert measurement_seconds("checkpoint_write", specs[("storage", "checkpoint_write")]) == pytest.approx(
        4 * 2**30 / 1e9 + OVERHEAD_S
    )
    assert measurement_seconds("rdma_bandwidth_outlier", None) == 0
    assert measurement_seconds("gpu_count", specs[("intra_node", "gpu_count")]) == READING_S


def test_rounds_and_waves_of_an_all_pairs_sweep() -> None:
    nodes = [f"n{i:02d}" for i in range(64)]
    pairs = make_pairs(nodes, "all")
    subjects = [PlannedSubject("inter_node", "tcp_throughput", "pair", p.round) for p in pairs]
    subjects += [PlannedSubject("inter_node", "tcp_throughput_outlier", "pair", p.round) for p in pairs]
    subjects += [PlannedSubject("storage", "random_read_iops", "wave") for _ in nodes]
    subjects += [PlannedSubject("egress", "download", "wave", resource="egress target m:443", limit=1) for _ in nodes]
    # the run's registry: the check families declare their own (download's typical time)
    plan = plan_run(subjects, _specs("hdr200"), fanout=64, checks=bundled_registry())
    assert plan.tests == 2 * 2016 + 128
    assert plan.rounds == 63
    assert plan.waves == 2
    # 63 rounds of 32 pairs, each one slot of tcp (10 s and its tools' start) and a batch's start;
    # iops once on every node; download one node at a time
    tcp = 10 + start_seconds("tcp_throughput")
    by_check = {c.check: c for c in plan.checks}
    assert by_check["tcp_throughput"].total_s == pytest.approx(63 * (tcp + BATCH_S))
    # the outlier check measures nothing itself, but re-measures the suspect share of the 2,016
    # pairs alone: 40 pairs, 32 at once, so 2 retest rounds of RETEST_REPEATS samples each
    assert RETEST_SHARE * 2016 > 32
    assert by_check["tcp_throughput_outlier"].total_s == pytest.approx(2 * (RETEST_REPEATS * tcp + BATCH_S))
    assert plan.rounds_s == by_check["tcp_throughput"].total_s + by_check["tcp_throughput_outlier"].total_s
    iops = 10 + OVERHEAD_S + layout_seconds("random_read_iops", _specs("hdr200"))  # runtime: 10 s, files laid out first
    assert plan.waves_s == pytest.approx((iops + BATCH_S) + (64 * 10 + BATCH_S))  # download: its declared typical time
    assert plan.outside_s == PER_TEST_S * plan.tests  # no inventory given: no connections to open
    # the bound: every pair of the sweep re-measured alone once (one step, 3 samples; these subjects
    # name no ends, so the sweep's 63 slots stand for the retest rounds), iops and downloads at their floors
    outlier = by_check["tcp_throughput_outlier"]
    assert outlier.retest_bound_s == pytest.approx(63 * (RETEST_REPEATS * tcp + BATCH_S))
    assert plan.bound_s == pytest.approx(plan.total_s - outlier.retest_s + outlier.retest_bound_s)
    assert plan.summary() == ("about 23 min (at most 54 min with retests), 4 checks: 4,160 tests, 63 rounds x ~11 s "
                              "+ 2 waves ~11 min, 64 nodes at once; times estimated")


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
    from pytest_fabric.run.batches import Share
    from pytest_fabric.run.pairs import Pair

    assert planned_subject("inter_node", "tcp_throughput", "node_pair", Pair(3, 0, "a", "b")).round == 3
    gpu = planned_subject("intra_node", "gpu_pcie", "gpu", ("n1", 2))
    assert (gpu.kind, gpu.once_per, gpu.resource) == ("wave", "n1", None)
    nfs = planned_subject("storage", "sequential_read", "mount", ("n1", "/nfs"), Share("shared mount /nfs", 1))
    assert (nfs.resource, nfs.limit) == ("shared mount /nfs", 1)
    assert planned_subject("storage", "sequential_read", "mount", ("n1", "/scratch")).resource is None
    assert planned_subject("inter_node", "scaling_efficiency", None, None).kind == "cluster"


def test_nothing_selected() -> None:
    assert plan_run([], {}, fanout=64, nodes=8).summary() == "nothing to measure, 0 tests on 8 nodes"


@pytest.mark.parametrize(
    ("seconds", "text"), [(40, "40 s"), (89, "89 s"), (120, "2.0 min"), (45 * 60, "45 min"), (10 * 3600, "10.0 h")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_a_pairs_bandwidth_rails_run_at_once_and_latency_and_aggregate_go_rail_by_rail() -> None:
    # hdr200 has 4 rails a pair. rdma_bandwidth and gpudirect_bandwidth run them (its GPUs) at once:
    # 3 x 5 s whatever the rails; rdma_latency goes rail by rail, and aggregate_rdma_bandwidth
    # measures each rail alone once, one after the other: the plan multiplies those by 4.
    from pytest_fabric.run.pairs import make_pairs as pairs_of

    specs = _specs("hdr200")
    pairs = pairs_of(["a", "b"], "all")

    def planned(check: str, rails: int) -> float:
        subjects = [PlannedSubject("inter_node", check, "pair", p.round) for p in pairs]
        return {c.check: c for c in plan_run(subjects, specs, fanout=64, rails=rails, gpus=rails).checks}[check].total_s

    assert planned("rdma_bandwidth", 4) == planned("rdma_bandwidth", 1) == 3 * (5 + OVERHEAD_S) + BATCH_S
    assert planned("gpudirect_bandwidth", 8) == planned("gpudirect_bandwidth", 1)
    assert planned("rdma_latency", 4) - BATCH_S == 4 * (planned("rdma_latency", 1) - BATCH_S)
    assert planned("aggregate_rdma_bandwidth", 4) - BATCH_S == 4 * (planned("aggregate_rdma_bandwidth", 1) - BATCH_S)


def test_the_plan_is_kept_per_phase_in_the_order_the_run_reaches_them() -> None:
    nodes = [f"n{i}" for i in range(8)]
    # handed over in no particular order: the phases come in the run's (layer, then waves before rounds)
    subjects = [PlannedSubject("egress", "dns_resolve", "wave") for _ in nodes]
    subjects += [PlannedSubject("inter_node", "tcp_throughput", "pair", p.round) for p in make_pairs(nodes, "all")]
    subjects += [PlannedSubject("inter_node", "mtu", "wave") for _ in nodes]
    subjects += [PlannedSubject("storage", "sequential_write", "wave") for _ in nodes]
    plan = plan_run(subjects, _specs("hdr200"), fanout=64, nodes=8)
    assert [name for name, _ in plan.phases()] == ["inter-node", "inter-node pairs", "storage", "egress"]
    assert plan.connect_s == CONNECT_S  # 8 nodes connect at once
    assert plan.total_s == pytest.approx(sum(s for _, s in plan.phases()) + CONNECT_S + PER_TEST_S * plan.tests)
    record = plan.to_json()
    assert record["planned_s"] == round(plan.total_s, 1) and record["summary"] == plan.summary()
    assert [p["phase"] for p in record["phases"]] == ["inter-node", "inter-node pairs", "storage", "egress"]
    assert record["phases"][1]["checks"] == ["tcp_throughput"]
    assert phase_of("inter_node", "rdma_bandwidth_outlier") == "inter-node pairs"
    assert phase_of("inter_node", "oversubscription") == "inter-node cluster checks"


def test_attribution_retests_are_an_expected_share_in_retest_rounds_unless_it_does_not_retest(tmp_path: Any) -> None:
    from pytest_fabric.run.pairs import make_pairs as pairs_of

    nodes = [f"n{i:03d}" for i in range(512)]
    pairs = pairs_of(nodes, "random:4")
    subjects = [PlannedSubject("inter_node", "rdma_bandwidth", "pair", p.round) for p in pairs]
    subjects += [PlannedSubject("inter_node", "attribution", "wave") for _ in nodes]
    specs = _specs("ndr400-large")
    plan = plan_run(subjects, specs, fanout=512, rails=8, nodes=512)
    retests = {c.check: c for c in plan.checks}["attribution"]
    one = 3 * (5 + OVERHEAD_S)  # rdma_bandwidth: 3 x 5 s, its 8 rails at once
    # 2% of 1,024 pairs is 20; 256 pairs run at once: one retest round of 3 samples
    assert len(pairs) == 1024 and retests.total_s == RETEST_REPEATS * one + BATCH_S
    assert retests.phase == phase_of("inter_node", "attribution")
    # at most: two steps of every pair alone both ways (twice the sweep's 4 slots: no ends named here),
    # then the 4 rounds of the sweep again
    assert retests.retest_bound_s == pytest.approx(2 * 8 * (RETEST_REPEATS * one + BATCH_S) + 4 * (one + BATCH_S))
    profile = tmp_path / "no-retest.yaml"
    profile.write_text("name: no-retest\nextends: ndr400-large\ninter_node:\n  attribution: {retest: false}\n")
    quiet = load_profile(str(profile), [])
    specs[("inter_node", "attribution")] = quiet.spec("inter_node", "attribution")
    quiet_plan = {c.check: c for c in plan_run(subjects, specs, fanout=512, rails=8).checks}["attribution"]
    assert quiet_plan.total_s == quiet_plan.bound_s == 0


def test_plan_vs_actual_sets_each_phase_beside_what_its_tests_took() -> None:
    from pytest_fabric.report.summary import OUTSIDE_CHECKS, plan_lines, plan_vs_actual

    nodes = ["n1", "n2", "n3", "n4"]
    subjects = [PlannedSubject("inter_node", "mtu", "wave") for _ in nodes]
    subjects += [PlannedSubject("inter_node", "tcp_throughput", "pair", p.round) for p in make_pairs(nodes, "all")]
    plan = plan_run(subjects, _specs("hdr200"), fanout=64, nodes=4).to_json()
    records = [
        {"layer": "inter_node", "check": "mtu", "duration_s": 1.2},
        *({"layer": "inter_node", "check": "tcp_throughput", "duration_s": 6.0} for _ in range(6)),
        {"layer": "storage", "check": "sequential_read", "duration_s": 0.001},  # skipped: not set
    ]
    timed = plan_vs_actual(plan, records, took_s=40.0)
    assert timed is not None and timed["took_s"] == 40.0 and timed["planned_s"] == plan["planned_s"]
    took = {p["phase"]: p["took_s"] for p in timed["phases"]}
    assert took == {"inter-node": 1.2, "inter-node pairs": 36.0, OUTSIDE_CHECKS: 2.8}
    lines = plan_lines(timed)
    assert lines[0] == f"plan vs actual: planned {format_duration(plan['planned_s'])}, took 40 s" \
        f" ({40.0 / plan['planned_s']:.2f} of the plan)"
    assert f"  inter-node pairs: planned {format_duration(plan['phases'][1]['planned_s'])}, took 36 s" in lines
    assert plan_vs_actual(None, records, 40.0) is None


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


def test_the_record_keeps_plan_and_actual_per_phase_and_the_terminal_shows_both(pytester: pytest.Pytester) -> None:
    import json

    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider",
                                           "--conformance-json", "record.json", "-k", "mtu or tcp_throughput")
    run = json.loads((pytester.path / "record.json").read_text())["run"]
    plan = run["plan"]
    assert plan["summary"] and plan["planned_s"] > 0 and plan["took_s"] > 0
    phases = {p["phase"]: p for p in plan["phases"]}
    assert phases["inter-node"]["checks"] == ["mtu"] and phases["inter-node pairs"]["checks"] == ["tcp_throughput"]
    assert all(p["took_s"] is not None for p in plan["phases"])
    assert sum(p["took_s"] for p in plan["phases"]) == pytest.approx(plan["took_s"], abs=0.5)
    result.stdout.fnmatch_lines(["plan vs actual: planned *, took *", "  inter-node pairs: planned *, took *"])


def test_the_html_run_table_shows_the_plan_beside_what_each_phase_took() -> None:
    from pytest_fabric.report import page
    from pytest_fabric.report.summary import plan_vs_actual
    from pytest_fabric.report.testing import sample_run_info

    nodes = ["n1", "n2"]
    subjects = [PlannedSubject("inter_node", "tcp_throughput", "pair", p.round) for p in make_pairs(nodes, "all")]
    plan = plan_run(subjects, _specs("hdr200"), fanout=64, nodes=2).to_json()
    timed = plan_vs_actual(plan, [{"layer": "inter_node", "check": "tcp_throughput", "duration_s": 9.0}], 12.0)
    html = page.run_table(sample_run_info(nodes), [], None, None, timed)
    assert "<th>Plan</th>" in html and "<li>inter-node pairs: planned 10 s, took 9 s</li>" in html
    assert "Plan" not in page.run_table(sample_run_info(nodes), [], None, None, None)


def _plan_of_collection(pytester: pytest.Pytester, inventory: str, profile: str, *args: str) -> Any:
    """The plan the plugin builds after collecting ``inventory`` against ``profile`` (nothing contacted)."""
    from pytest_fabric.report.progress import PLAN_KEY

    pytester.makefile(".yaml", inv=inventory)
    pytester.makefile(".yaml", prof=profile)
    recorded = pytester.inline_run("--cluster", "inv.yaml", "--profile", "prof.yaml", "--collect-only", "-qq",
                                   "-p", "no:cacheprovider", *args)
    (call,) = recorded.getcalls("pytest_collection_finish")
    return call.session.config.stash[PLAN_KEY]


def test_plan_items_takes_shares_from_the_rule_the_run_uses(pytester: pytest.Pytester) -> None:
    """16 nodes, fanout 16: downloads go egress.concurrency (2) at a time to the one server (8 slots),
    a shared mount measured together is one wave of all 16 at once, one measured alone (the default)
    takes turns, and a mount of no stated type counts as shared (sharing.mount_is_shared), while
    the mount check itself (findmnt) shares nothing."""
    inventory = ("name: sixteen\nnodes:\n  - name: n[01-16]\n"
                 "storage:\n  mounts:\n    - {path: /lustre, fstype: lustre}\n    - {path: /data}\n"
                 "egress:\n  concurrency: 2\n  targets: [https://mirror.example.com/a.bin, https://mirror.example.com/b.bin]\n")
    profile = ("name: shares\nstorage:\n"
               "  sequential_read: {min: 1 MB/s, size: 1 GiB, measured: together, runtime: 5 s}\n"
               "  sequential_write: {min: 1 MB/s, size: 1 GiB}\n"
               "egress:\n  download: {min: 1 Mb/s}\n  dns_resolve: {max: 1 s}\n")
    plan = _plan_of_collection(pytester, inventory, profile, "--fabric-fanout", "16")
    by_check = {c.check: c for c in plan.checks}
    # two targets on one server (mirror.example.com:443): 32 downloads, 2 at once
    assert by_check["download"].slots == 16
    assert by_check["dns_resolve"].slots == 2  # a lookup is not capped: 32 under a fan-out of 16
    # together: both mounts' 16 nodes at once under the fan-out (32 subjects, 16 at once)
    assert by_check["sequential_read"].slots == 2
    # alone on two shared mounts (the untyped one counts as shared): 16 turns on each, side by side
    assert by_check["sequential_write"].slots == 16
    assert by_check["mount"].slots == 2


def test_a_read_check_counts_laying_out_its_files() -> None:
    """Reads lay out size x jobs first (probes/storage.py), a write at the write floor: ndr400-large's
    together read of 20 s is 8 x 2 GiB at 600 MB/s (~29 s) before its window."""
    specs = _specs("ndr400-large")
    laid = layout_seconds("sequential_read", specs)
    assert laid == pytest.approx(8 * 2 * 2**30 / 600e6 + OVERHEAD_S)
    assert layout_seconds("sequential_write", specs) == 0.0
    plan = plan_run([PlannedSubject("storage", "sequential_read", "wave")], specs, fanout=64)
    assert plan.checks[0].seconds == pytest.approx(laid + 20 + OVERHEAD_S)


def test_a_transfer_bounded_by_bytes_plans_its_connect_and_bytes_over_the_floor(pytester: pytest.Pytester) -> None:
    """A download or upload the profile bounds (``bytes:``) takes, passing, at most a connect and its
    bytes at the floor; an unbounded download cannot know the file's size and keeps its declared time.
    16 nodes at egress.concurrency 2: 8 turns of each."""
    inventory = ("name: sixteen\nnodes:\n  - name: n[01-16]\n"
                 "egress:\n  concurrency: 2\n  targets: [https://mirror.example.com/a.bin, "
                 "{url: 'https://drop.example.com/put', upload: true}]\n")
    profile = ("name: bounded\negress:\n  download: {min: 1 Gb/s, bytes: 256 MiB}\n"
               "  upload: {min: 100 Mb/s, bytes: 8 MiB}\n")
    by_check = {c.check: c for c in _plan_of_collection(pytester, inventory, profile, "--fabric-fanout", "16").checks}
    download = TRANSFER_CONNECT_S + OVERHEAD_S + 256 * 2**20 * 8 / 1e9
    upload = TRANSFER_CONNECT_S + OVERHEAD_S + 8 * 2**20 * 8 / 100e6
    assert by_check["download"].seconds == pytest.approx(download)
    assert by_check["upload"].seconds == pytest.approx(upload)
    assert by_check["download"].total_s == pytest.approx(8 * download + BATCH_S)
    # unbounded: the declared typical time, as before
    assert measurement_seconds("download", _specs("hdr200")[("egress", "download")], checks=bundled_registry()) == 10.0
    # the bundled large profile bounds its download: 64 turns at 512 nodes are minutes, not 10.7
    assert measurement_seconds("download", _specs("ndr400-large")[("egress", "download")]) == pytest.approx(
        TRANSFER_CONNECT_S + OVERHEAD_S + 256 * 2**20 * 8 / 1e9)


GIB16 = 16 * 2**30


def test_one_all_reduce_perf_run_is_its_start_and_the_probes_collectives_at_the_floor() -> None:
    """The probe runs all_reduce_perf at one size with nccl-tests 2.17's own -w 1 and -n 20 and -c 1:
    one warmup, then out-of-place and in-place, each a sync, 20 timed and one checked collective (45).
    16 GiB at a 370 GB/s busbw floor over 2 x 8 ranks is 16 GiB at 370 x 16 / 30 ~ 197 GB/s algbw."""
    assert nccl._program(8) == "all_reduce_perf -b 8 -e 8 -f 2 -g 1 -c 1"  # no -w, -n: the defaults
    assert nccl.COLLECTIVES_PER_RUN == 1 + 2 * (1 + 20 + 1) == 45
    algbw = 370e9 * 16 / 30
    assert algbw == pytest.approx(197.3e9, rel=1e-3)
    run = allreduce_seconds(GIB16, 370e9, 16)
    assert run == pytest.approx(NCCL_START_S + 16 * NCCL_START_PER_RANK_S + 45 * GIB16 / algbw)
    assert 10 < run < 15  # the declared 60 s guess was four to five times that
    # the start grows with the ranks; one rank (no all_reduce to speak of) is planned as two
    assert allreduce_seconds(GIB16, 370e9, 4096) - allreduce_seconds(GIB16, 370e9, 2048) > 0
    assert allreduce_seconds(GIB16, 370e9, 1) == pytest.approx(allreduce_seconds(GIB16, 370e9, 2)
                                                               - NCCL_START_PER_RANK_S)


def test_nccl_checks_plan_the_runs_their_probes_make_not_a_declared_guess() -> None:
    """ndr400-large: a pair's all_reduce is one run over 2 x 8 GPUs at 360 GB/s, a node's one over its
    8 GPUs at 460 GB/s; 16 GiB each."""
    profile = load_profile("ndr400-large", [])
    pair_spec, node_spec = profile.spec("inter_node", "nccl_allreduce"), profile.spec("intra_node", "nccl_allreduce")
    assert nccl_runs("nccl_allreduce", pair_spec, gpus=8) == [(GIB16, 360e9, 16)]
    assert nccl_runs("node_nccl_allreduce", node_spec, gpus=8) == [(GIB16, 460e9, 8)]
    assert measurement_seconds("nccl_allreduce", pair_spec, gpus=8) == pytest.approx(allreduce_seconds(GIB16, 360e9, 16))
    assert measurement_seconds("node_nccl_allreduce", node_spec, gpus=8) == pytest.approx(
        NCCL_START_S + 8 * NCCL_START_PER_RANK_S + 45 * GIB16 / (460e9 * 8 / 14))
    # the declared guesses are gone where the profile gives a size and a floor
    assert measurement_seconds("nccl_allreduce", pair_spec, gpus=8) < 20 < 60
    assert measurement_seconds("node_nccl_allreduce", node_spec, gpus=8) < 20 < 45
    # without a floor nothing says how long a run takes: the declared time
    assert measurement_seconds("nccl_allreduce", None, gpus=8) == 60.0


def test_scaling_plans_every_run_scaling_makes_on_the_inventorys_nodes() -> None:
    """512 nodes: 3 baseline pairs and the curve at 4, 8, ... 512 nodes (8 counts), 3 runs each: 3 x 3 + 8 x 3.
    The pairs at the 360 GB/s floor, the curve at 85% of it (the slowest a passing curve runs)."""
    profile = load_profile("ndr400-large", [])
    source, share = profile.spec("inter_node", "nccl_allreduce"), profile.spec("inter_node", "scaling_efficiency")
    assert nccl.scaling_groups(512) == (3, [4, 8, 16, 32, 64, 128, 256, 512])
    runs = nccl_runs("scaling_efficiency", share, gpus=8, nodes=512, source=source)
    assert runs is not None and len(runs) == 3 * 3 + 8 * 3
    assert runs[:9] == [(GIB16, 360e9, 16)] * 9
    assert runs[9:] == [(GIB16, pytest.approx(0.85 * 360e9), 8 * n) for n in (4, 8, 16, 32, 64, 128, 256, 512)
                        for _ in range(3)]
    planned = measurement_seconds("scaling_efficiency", share, gpus=8, nodes=512, source=source)
    assert planned == pytest.approx(sum(allreduce_seconds(*run) for run in runs))
    assert planned != 300.0
    # fewer than 3 nodes: the check skips; no node count, or no size to run at: the declared time
    assert measurement_seconds("scaling_efficiency", share, gpus=8, nodes=2, source=source) == 0
    assert measurement_seconds("scaling_efficiency", share, gpus=8, source=source) == 300.0
    assert measurement_seconds("scaling_efficiency", share, gpus=8, nodes=512) == 300.0


def test_scaling_groups_are_the_runs_scaling_makes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's count comes from the probe: every allreduce scaling() starts, by node count."""
    from types import SimpleNamespace

    from pytest_fabric.config.units import bandwidth
    from pytest_fabric.judge.verdict import Measurement

    started: list[int] = []

    def fake(nodes: Any, **_: Any) -> Measurement:
        started.append(len(nodes))
        return Measurement(value=bandwidth(370, "GB/s"), detail="")

    monkeypatch.setattr(nccl, "allreduce", fake)
    for count in (3, 5, 12):
        started.clear()
        nccl.scaling([SimpleNamespace(name=f"n{i}") for i in range(count)], size_bytes=GIB16,  # type: ignore[misc]
                     gpus_per_node=8)
        pairs, counts = nccl.scaling_groups(count)
        assert started == [2] * (pairs * nccl.SCALING_SAMPLES) + [n for n in counts for _ in range(nccl.SCALING_SAMPLES)]


def test_plan_run_takes_the_nccl_checks_ranks_from_the_gpus_and_the_inventorys_nodes() -> None:
    specs = {("inter_node", "nccl_allreduce"): load_profile("ndr400-large", []).spec("inter_node", "nccl_allreduce"),
             ("inter_node", "scaling_efficiency"): load_profile("ndr400-large", []).spec("inter_node",
                                                                                          "scaling_efficiency")}
    subjects = [PlannedSubject("inter_node", "nccl_allreduce", "pair", r) for r in range(4)]
    subjects.append(PlannedSubject("inter_node", "scaling_efficiency", "cluster"))
    by_check = {c.check: c for c in plan_run(subjects, specs, fanout=512, gpus=8, nodes=512).checks}
    assert by_check["nccl_allreduce"].seconds == pytest.approx(allreduce_seconds(GIB16, 360e9, 16))
    assert by_check["nccl_allreduce"].total_s == pytest.approx(4 * (allreduce_seconds(GIB16, 360e9, 16) + BATCH_S))
    assert by_check["scaling_efficiency"].seconds == pytest.approx(measurement_seconds(
        "scaling_efficiency", specs[("inter_node", "scaling_efficiency")], gpus=8, nodes=512,
        source=specs[("inter_node", "nccl_allreduce")]))


def test_a_check_declares_what_starting_its_tools_costs() -> None:
    """An iperf3 pair's start is a fraction of a second (0.14 s beyond -t on 8 quiet simulated nodes),
    not the 0.7 s the plan assumes of a tool it knows nothing about (perftest's QP set-up, fio's
    start): planning every 2 s TCP pair at 2.8 s put an 8-node sweep's plan at 1.45x its wall."""
    assert start_seconds("tcp_throughput") == 0.25
    assert start_seconds("rdma_bandwidth") == OVERHEAD_S
    spec = _specs("hdr200")[("inter_node", "tcp_throughput")]
    assert measurement_seconds("tcp_throughput", spec) == pytest.approx(10.25)


@pytest.mark.parametrize(("level", "seconds"), [(1, 120.0), (2, 240.0), (3, 1020.0), (4, 3720.0)])
def test_the_plan_prices_each_dcgm_level(level: int, seconds: float) -> None:
    from pytest_fabric.checks.gpu import GpuHealth
    from pytest_fabric.run.plan import measurement_seconds

    # NVIDIA's dcgmi diag reference: seconds, ~2 min, ~15 min, longer; each with a level-1 run's 2 min
    assert measurement_seconds("gpu_health", GpuHealth(level=level)) == seconds


def test_gemm_and_clock_throttling_share_one_load_in_the_plan() -> None:
    from unit.bundled_registry import bundled_registry

    from pytest_fabric.checks.gpu_load import ClockThrottling, GemmThroughput
    from pytest_fabric.run.plan import _one_measurement

    registry = bundled_registry()
    gemm, clocks = GemmThroughput.model_validate({"duration": "60 s"}), ClockThrottling.model_validate({"duration": "90 s"})
    both = {("intra_node", "gemm_throughput"): gemm, ("intra_node", "clock_throttling"): clocks}
    g = _one_measurement("intra_node", "gemm_throughput", both, 1, 8, checks=registry)
    c = _one_measurement("intra_node", "clock_throttling", both, 1, 8, checks=registry)
    assert g == 70.0 and c == 30.0  # 60 s + the load's 10 s start, then the 30 s the longer duration adds
    alone = {("intra_node", "clock_throttling"): clocks}
    assert _one_measurement("intra_node", "clock_throttling", alone, 1, 8, checks=registry) == 100.0


def _sweep(nodes: list[str], *checks: str) -> list[PlannedSubject]:
    """An all-pairs sweep's tests as the plugin hands them over (each pair's round and ends), and a node test
    of each per-node check."""
    subjects = [planned_subject("inter_node", "tcp_throughput", "node_pair", p) for p in make_pairs(nodes, "all")]
    for check in checks:
        if check == "tcp_throughput_outlier":
            subjects += [planned_subject("inter_node", check, "node_pair", p) for p in make_pairs(nodes, "all")]
        else:
            subjects += [planned_subject("inter_node", check, "node", (n,)) for n in nodes]
    return subjects


def _tcp(duration: str = "2 s") -> dict[tuple[str, str], Any]:
    """2 s TCP pairs, the outlier rule and attribution, typed by the models the checks declare."""
    def typed(check: str, settings: dict[str, Any]) -> Any:
        declared = bundled_registry().check_of(check)
        assert declared is not None and declared.model is not None
        return declared.model.model_validate(settings)

    outlier = typed("tcp_throughput_outlier", {"max_below_median": "20%"})
    return {("inter_node", "tcp_throughput"): typed("tcp_throughput", {"min": "1.5 Gb/s", "duration": duration}),
            ("inter_node", "outlier"): outlier, ("inter_node", "tcp_throughput_outlier"): outlier,
            ("inter_node", "attribution"): typed("attribution", {})}


def test_the_bound_counts_every_retest_round_the_run_would_make() -> None:
    """A slow node's retests took 100 s that no plan line showed (issue 28). The bound holds the most each
    check declares: attribution's two steps of every pair of the sweep alone in both directions (a suspect
    sends to its helpers and receives from them), in the rounds retests.schedule makes of them (the run's
    own schedule), three samples a round, then the sweep's rounds again; the outliers' one step, one way.
    The estimate keeps the expected share."""
    from pytest_fabric.checks.attribution import ATTRIBUTION
    from pytest_fabric.checks.tcp import TCP_THROUGHPUT_OUTLIER
    from pytest_fabric.run import retests

    nodes = [f"node{i:02d}" for i in range(1, 9)]
    plan = plan_run(_sweep(nodes, "tcp_throughput_outlier", "attribution"), _tcp(), fanout=64, nodes=8)
    by_check = {c.check: c for c in plan.checks}
    one = 2 + start_seconds("tcp_throughput")
    ends = [(p.a, p.b) for p in make_pairs(nodes, "all")]
    alone = retests.rounds_needed(ends, 32)
    assert alone == 7  # every node is in 7 pairs: 7 rounds of 4
    both_ways = retests.rounds_needed(ends + [(b, a) for a, b in ends], 32)
    assert both_ways == 14
    assert ATTRIBUTION.retests is not None and TCP_THROUGHPUT_OUTLIER.retests is not None
    attribution = by_check["attribution"]
    assert attribution.retest_bound_s == pytest.approx(2 * both_ways * (3 * one + BATCH_S) + 7 * (one + BATCH_S))
    assert by_check["tcp_throughput_outlier"].retest_bound_s == pytest.approx(alone * (3 * one + BATCH_S))
    # 2% of 28 pairs is 0.56 of a pair: that share of one retest round, as the estimate
    assert attribution.retest_s == pytest.approx(RETEST_SHARE * 28 * (RETEST_REPEATS * one + BATCH_S))
    assert plan.bound_s == pytest.approx(plan.total_s - attribution.retest_s - by_check["tcp_throughput_outlier"].retest_s
                                         + attribution.retest_bound_s + by_check["tcp_throughput_outlier"].retest_bound_s)
    assert "with retests" in plan.summary() and format_duration(plan.bound_s) in plan.summary()
    # attribution told not to retest: nothing of it in either figure
    quiet = {**_tcp(), ("inter_node", "attribution"): _tcp()[("inter_node", "attribution")].model_copy(
        update={"retest": False})}
    muted = {c.check: c for c in plan_run(_sweep(nodes, "attribution"), quiet, fanout=64, nodes=8).checks}
    assert muted["attribution"].bound_s == muted["attribution"].total_s == 0


def test_the_cap_on_retest_rounds_is_the_runs() -> None:
    """--fabric-fanout 4 counts nodes: 2 pairs a retest round (members_at_once), as retest_alone runs them."""
    from pytest_fabric.run import retests
    from pytest_fabric.run.batches import members_at_once

    nodes = [f"node{i:02d}" for i in range(1, 9)]
    plan = plan_run(_sweep(nodes, "tcp_throughput_outlier"), _tcp(), fanout=4, nodes=8)
    outlier = {c.check: c for c in plan.checks}["tcp_throughput_outlier"]
    one = 2 + start_seconds("tcp_throughput")
    rounds = retests.rounds_needed([(p.a, p.b) for p in make_pairs(nodes, "all")], members_at_once(4, 2))
    assert rounds == 14  # 28 pairs, 2 at once
    assert outlier.retest_bound_s == pytest.approx(rounds * (3 * one + BATCH_S))
    assert {c.check: c for c in plan.checks}["tcp_throughput"].slots == 14


def test_a_previous_runs_times_make_the_estimate_and_the_line_says_where_each_came_from() -> None:
    from pytest_fabric.run.plan import CheckTime, PreviousRun

    nodes = [f"node{i:02d}" for i in range(1, 9)]
    subjects = _sweep(nodes, "mtu", "attribution")
    previous = PreviousRun("2026-12-02 08:01 UTC", {"tcp_throughput": CheckTime(2.9), "attribution": CheckTime(0, 95.0)},
                           outside_s=3.5)
    fresh = plan_run(subjects, _tcp(), fanout=64, nodes=8)
    again = plan_run(subjects, _tcp(), fanout=64, nodes=8, previous=previous)
    by_check = {c.check: c for c in again.checks}
    assert by_check["tcp_throughput"].total_s == pytest.approx(7 * (2.9 + BATCH_S))
    assert by_check["attribution"].total_s == 95.0  # the slow node's retests, as the previous run took them
    assert by_check["mtu"].total_s == {c.check: c for c in fresh.checks}["mtu"].total_s  # not in the cache: estimated
    assert again.outside_s == 3.5
    # the bound still takes every measurement at its floor and the most retests, never less than the estimate
    assert again.bound_s >= again.total_s and by_check["attribution"].bound_s >= 95.0
    assert again.summary().endswith("; times from the previous run of this inventory (2026-12-02 08:01 UTC) for "
                                    "tcp_throughput, attribution; estimated for mtu")
    record = again.to_json()
    assert record["times"] == {"previous_run": "2026-12-02 08:01 UTC",
                               "from_previous_run": ["tcp_throughput", "attribution"], "estimated": ["mtu"]}
    assert record["bound_s"] == round(again.bound_s, 1)
    assert fresh.summary().endswith("; times estimated")


def test_a_time_budget_is_judged_against_the_bound() -> None:
    """The estimate fits the budget, the bound with a slow node's retests does not: refused, naming the bound,
    the estimate, the retests and the fixes."""
    nodes = [f"node{i:02d}" for i in range(1, 9)]
    plan = plan_run(_sweep(nodes, "attribution"), _tcp(), fanout=64, nodes=8)
    between = (plan.total_s + plan.bound_s) / 2
    assert plan.total_s < between < plan.bound_s
    why = plan.over_budget(between)
    assert why is not None
    assert why.startswith(f"the plan takes at most {format_duration(plan.bound_s)} (about "
                          f"{format_duration(plan.total_s)}), more than --time-budget {format_duration(between)}")
    assert "inter_node.attribution at most" in why and "of it retests" in why
    assert "inter_node.attribution: {retest: false}" in why and "Give a budget of at least" in why
    assert plan.over_budget(plan.bound_s + 1) is None


def test_the_times_kept_are_each_measurement_by_the_plans_schedule() -> None:
    """What the cache keeps: a measuring check's tests' time less its batches' starts, over its slots; a
    retesting check's whole time as its retests; a check with an error or a skip, nothing."""
    from pytest_fabric.report.check_times import check_times

    nodes = [f"node{i:02d}" for i in range(1, 9)]
    plan = plan_run(_sweep(nodes, "mtu", "attribution"), _tcp(), fanout=64, nodes=8)
    records = [{"check": "tcp_throughput", "outcome": "passed", "duration_s": 17.0 / 28} for _ in range(28)]
    records += [{"check": "attribution", "outcome": "failed" if n == "node03" else "passed",
                 "duration_s": 90.0 if n == "node01" else 0.01} for n in nodes]
    records += [{"check": "mtu", "outcome": "passed", "duration_s": 0.2}] * 7 + [{"check": "mtu", "outcome": "error"}]
    kept = check_times(plan, records)
    assert kept["tcp_throughput"] == {"measurement_s": pytest.approx((17.0 - 7 * BATCH_S) / 7, abs=1e-3),
                                      "retest_s": 0.0}
    assert kept["attribution"] == {"measurement_s": 0.0, "retest_s": pytest.approx(90.07)}
    assert "mtu" not in kept


def test_the_next_run_plans_from_the_previous_runs_times_and_says_so(pytester: pytest.Pytester) -> None:
    """Two local nodes, mtu: the first run's plan is estimated, the next one's from the first run's times
    (pytest's cache, keyed by the inventory and the profile); with -p no:cacheprovider, estimated and said
    so; another profile of the same inventory has times of its own."""
    from pytest_fabric.report.progress import PLAN_KEY

    pytester.makefile(".yaml", inv="name: two\nnodes:\n  - name: n1\n    host: localhost\n  - name: n2\n    host: localhost\n")
    pytester.makefile(".yaml", prof="name: tiny\ninter_node:\n  mtu: {min: 1000}\n")

    def plan_line(*more: str) -> str:
        recorded = pytester.inline_run("--cluster", "inv.yaml", "--profile", "prof.yaml", "-k", "mtu", "-qq", *more)
        (call,) = recorded.getcalls("pytest_collection_finish")
        return str(call.session.config.stash[PLAN_KEY].summary())

    first = plan_line()  # measures: the times are kept at its end
    assert first.endswith("; times estimated (no previous run of this inventory and profile in pytest's cache)"), first
    second = plan_line("--collect-only")
    assert " times from the previous run of this inventory (" in second and second.endswith(" UTC) for mtu"), second
    assert plan_line("--collect-only", "-p", "no:cacheprovider").endswith(
        "; times estimated (pytest's cache is off: -p no:cacheprovider)")
    pytester.makefile(".yaml", prof="name: tiny2\ninter_node:\n  mtu: {min: 1000}\n")
    assert plan_line("--collect-only").endswith("; times estimated (no previous run of this inventory and profile in "
                                                "pytest's cache)")


def test_what_collection_spent_before_the_plan_is_part_of_it() -> None:
    """The run's time starts with the session: what collecting took before the plan is measured, not
    estimated, and sits with the connections outside the checks (a previous run's figure already holds it)."""
    from pytest_fabric.run.plan import CheckTime, PreviousRun

    nodes = [f"node{i:02d}" for i in range(1, 9)]
    fresh = plan_run(_sweep(nodes, "mtu"), _tcp(), fanout=64, nodes=8, items=80)
    spent = plan_run(_sweep(nodes, "mtu"), _tcp(), fanout=64, nodes=8, items=80, spent_s=2.5)
    assert spent.outside_s == pytest.approx(fresh.outside_s + 2.5)
    assert spent.total_s == pytest.approx(fresh.total_s + 2.5) and spent.bound_s == pytest.approx(fresh.bound_s + 2.5)
    previous = PreviousRun("2026-12-02 08:01 UTC", {"tcp_throughput": CheckTime(2.4)}, outside_s=3.5)
    assert plan_run(_sweep(nodes, "mtu"), _tcp(), fanout=64, nodes=8, previous=previous, spent_s=2.5).outside_s == 3.5


def test_under_last_failed_a_pair_checks_failing_pairs_are_retested_in_the_plan() -> None:
    """--lf: each round runs whole again and its failing pairs are re-measured alone, together, three samples
    (measurements/inter_node.py _retest_round_failures): a retest round per round, in both figures."""
    nodes = [f"node{i:02d}" for i in range(1, 9)]
    plain = {c.check: c for c in plan_run(_sweep(nodes), _tcp(), fanout=64, nodes=8).checks}["tcp_throughput"]
    lf = {c.check: c for c in plan_run(_sweep(nodes), _tcp(), fanout=64, nodes=8, last_failed=True).checks}
    one = 2 + start_seconds("tcp_throughput")
    again = 7 * (RETEST_REPEATS * one + BATCH_S)
    assert lf["tcp_throughput"].total_s == pytest.approx(plain.total_s + again)
    assert lf["tcp_throughput"].bound_s == pytest.approx(plain.bound_s + again)
