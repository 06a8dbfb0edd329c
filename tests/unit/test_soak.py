"""``--soak DURATION`` on this machine (``--cluster local``): cycles, one verdict, run.soak, the charts, SIGTERM.

Kept short (a few seconds a soak): two cycles show what forty would.
"""

from __future__ import annotations

import html
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_fabric.judge.soak import Figure
from pytest_fabric.session.soak import cycles_left, progress_text

LOCAL = ("--cluster", "local", "-p", "no:cacheprovider")
# the MTU alone: a cycle well under a second even on a loaded 2-core machine (loopback TCP took 4 s there)
QUICK = """name: quick-soak
inter_node:
  mtu: {min: 1500, source: Ethernet minimum}
soak: {max_drift: 10%, interval: 1 s}
"""
ONLY = ("-k", "test_mtu")


@pytest.fixture
def quick(pytester: pytest.Pytester) -> str:
    return str(pytester.makefile(".yaml", **{"quick-soak": QUICK}))


def test_a_short_soak_runs_cycles_to_one_verdict_records_them_and_draws_them(pytester: pytest.Pytester, quick: str) -> None:
    result = pytester.runpytest_subprocess(*LOCAL, "--profile", quick, *ONLY, "--soak", "4s", "--conformance-json=record.json", "--html=report.html",
                                           "--self-contained-html")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert out.count("ACCEPT:") == 1, out  # one verdict, however many cycles
    assert "soak: cycle 1 of about" in out and "worst of the cycle:" in out
    record = json.loads((pytester.path / "record.json").read_text())
    soak = record["run"]["soak"]
    assert soak["cycles"] >= 2 and soak["status"] == "complete"
    assert record["run"]["verdict"] == "accept" and soak["judgement"]["verdict"] == "accept"
    # plan vs actual sets the plan (one cycle) beside the last cycle, not beside the whole soak
    last = soak["cycle_spans"][soak["cycles"] - 1]
    assert abs(record["run"]["plan"]["took_s"] - (last["end_s"] - last["start_s"])) < 0.5, record["run"]["plan"]
    (mtu,) = soak["figures"]
    assert mtu["key"] == "inter_node.mtu" and mtu["limit"] == 1500
    assert len(mtu["points"]) >= 2 and {p[0] for p in mtu["points"]} >= {1, 2} and all(p[2] >= 1500 for p in mtu["points"])
    assert soak["telemetry"]["series"], soak["telemetry"]  # the machine's ports at least
    assert "no nvidia-smi" in " ".join(soak["telemetry"]["not_sampled"].values()) or any(
        s["series"].endswith("temperature") for s in soak["telemetry"]["series"])
    page = (pytester.path / "report.html").read_text()
    assert page.count('class="fabric-soak-chart"') >= 1  # the MTU's; this machine's ports were steady: said
    assert "steady throughout" in page and "eth0 state (state)" in page or page.count('class="fabric-soak-chart"') > 1
    # pytest-html's results: a row per test, not per test and cycle (all passed)
    blob = json.loads(html.unescape(re.search(r'data-jsonblob="([^"]*)"', page).group(1)))  # type: ignore[union-attr]
    assert {len(rows) for rows in blob["tests"].values()} == {1}, {k: len(v) for k, v in blob["tests"].items()}
    assert "inter_node.mtu: higher is better" in page


def test_a_soak_needs_a_duration(pytester: pytest.Pytester, quick: str) -> None:
    result = pytester.runpytest(*LOCAL, "--profile", quick, "--soak", "soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--soak soon: give a duration such as 40s, 30m or 24h*"])


def test_sigterm_ends_a_soak_keeping_its_sealed_cycles(pytester: pytest.Pytester, quick: str) -> None:
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", *LOCAL, "--profile", quick, *ONLY, "--soak", "120s",
         "--conformance-json=record.json"],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "FABRIC_TEST_CHECKOUT": "1"})
    record = pytester.path / "record.json"
    try:
        deadline = time.monotonic() + 60
        cycles = 0
        while time.monotonic() < deadline and run.poll() is None and cycles < 2:
            time.sleep(0.2)
            try:
                cycles = json.loads(record.read_text())["run"].get("soak", {}).get("cycles", 0)
            except (OSError, ValueError):
                continue
        assert cycles >= 2, run.communicate(timeout=5)[0] if run.poll() is not None else "no 2 cycles in 60 s"
        run.send_signal(signal.SIGTERM)
        output, _ = run.communicate(timeout=20)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    run_json = json.loads(record.read_text())["run"]
    assert run_json["status"] == "interrupted", output
    assert run_json["soak"]["status"] == "interrupted" and run_json["soak"]["cycles"] >= 2
    assert run_json["soak"]["judgement"]["cycles"] == run_json["soak"]["cycles"]
    assert run_json["verdict"] == "interrupted", output
    assert "soak: " in output and "INTERRUPTED" in output


def _figure(outcome: str = "passed", value: float = 12.1, margin: float = 11.1) -> Figure:
    return Figure(2, 10.0, "t", "inter_node.tcp_throughput", "local", ("local",), outcome, value, "Gb/s", True, margin)


def test_progress_says_the_cycle_of_about_n_the_time_left_and_the_worst_figure() -> None:
    assert cycles_left(10, 40, 5) == 6 and cycles_left(40, 40, 5) == 0 and cycles_left(39.5, 40, 5) == 1
    text = progress_text(2, 10.0, 40.0, 5.0, _figure())
    assert text == ("soak: cycle 2 of about 8 done in 5 s; 30 s left; worst of the cycle: local "
                    "inter_node.tcp_throughput 12.1 Gb/s (1110% inside its limit)")
    assert progress_text(3, 41.0, 40.0, 5.0, _figure("failed", 0.5, -0.5)).endswith("(50% beyond its limit) FAILED")
    assert "no time left" in progress_text(3, 41.0, 40.0, 5.0, None)
    ceiling = Figure(1, 1.0, "d", "egress.dns_resolve", "local", ("local",), "passed", 34.0, "ms", False, -0.93)
    assert progress_text(1, 1.0, 40.0, 5.0, ceiling).endswith("34 ms (93% inside its limit)")


def test_a_soak_record_is_valid_against_the_record_schema(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from pytest_fabric.judge.soak import Sample
    from pytest_fabric.session.soak import SoakLog

    schema = json.loads((Path(__import__("pytest_fabric.report", fromlist=["x"]).__file__).parent
                         / "record.schema.json").read_text())
    log = SoakLog(60.0, 1.0, 0.1)
    log.begin(1)
    log.add_check({"nodeid": "t[a]", "layer": "inter_node", "check": "mtu", "subject": "a", "nodes": ["a"],
                   "outcome": "passed", "measured": {"value": 9000, "unit": ""}, "expected": {"value": 1500, "unit": ""},
                   "margin": 5.0})
    log.add_samples([Sample(0.5, "a", "eth0 state", 1.0, "", "state", "up")], {"a": "gpu: no nvidia-smi on the node"})
    log.end(1)
    log.judge()
    soak = log.to_json()
    jsonschema.validate({"soak": soak}, {"type": "object", "properties": {"soak": schema["properties"]["run"]
                                                                          ["properties"]["soak"]}})
    assert soak["cycles"] == 1 and soak["figures"][0]["limit"] == 1500


def test_the_profile_soak_section_is_typed_and_its_mistakes_named(pytester: pytest.Pytester) -> None:
    from pytest_fabric.config.profile import Soak

    soak = Soak(max_drift="10%", interval="2 s", load="1 min")
    assert (soak.max_drift_fraction, soak.interval_s, soak.load_s) == (0.1, 2.0, 60.0)
    assert Soak().max_drift_fraction is None and Soak().interval_s == 30.0
    pytester.makefile(".yaml", drift="name: drift\nsoak: {max_drift: 10 s}\n")
    result = pytester.runpytest(*LOCAL, "--profile", "drift.yaml", "--soak", "5s")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*drift.yaml:2*soak.max_drift*expected a percent such as '10%'*"])


def test_a_slurm_allocation_holds_the_soak_and_one_more_cycle() -> None:
    from pytest_fabric.session.soak import allocation_plan_s
    from pytest_fabric.transport.slurm.settings import allocation_minutes

    assert allocation_plan_s(300.0, None) == 300.0 and allocation_plan_s(None, None) is None
    assert allocation_plan_s(300.0, 8 * 3600.0) == 8 * 3600.0 + 300.0
    assert allocation_minutes(allocation_plan_s(300.0, 8 * 3600.0) or 0) >= 8 * 60 + 5  # not the plan's 18 min


def test_a_day_of_telemetry_is_kept_as_changes_and_thinned_levels_and_still_judged() -> None:
    from pytest_fabric.judge.soak import Sample
    from pytest_fabric.session.soak import MAX_LEVEL_POINTS, SoakLog

    log = SoakLog(86400.0, 30.0, None)
    for i in range(2880):  # a day at 30 s
        at = i * 30.0
        errors = 0.0 if i < 2000 else 3.0  # a port's errors grow at 16:40
        log.add_samples([Sample(at, "n1", "eth0 rx errors", errors, kind="counter"),
                         Sample(at, "n1", "gpu0 temperature", 60.0 + i % 7, "C")], {})
    series = {s["series"]: s["points"] for s in log.to_json()["telemetry"]["series"]}
    assert [p[1] for p in series["eth0 rx errors"]] == [0.0, 3.0, 3.0]  # first, the change, the latest
    assert series["eth0 rx errors"][-1][0] == 2879 * 30.0
    assert MAX_LEVEL_POINTS // 2 <= len(series["gpu0 temperature"]) <= MAX_LEVEL_POINTS + 1
    log.begin(1)
    log.end(1)
    verdict = log.judge()
    assert [(f.kind, f.at) for f in verdict.faults] == [("counter", 2000 * 30.0)]


def test_a_slurm_inventory_whose_time_ends_before_the_soak_is_refused(pytester: pytest.Pytester, quick: str) -> None:
    pytester.makefile(".yaml", inv="name: s\ndefaults: {transport: slurm}\nslurm: {partition: sim, time: 30}\n"
                                   "nodes:\n  - name: node01\n")
    result = pytester.runpytest("--cluster", "inv.yaml", "-p", "no:cacheprovider", "--profile", quick, "--soak", "2h")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--soak 2h: inventory *inv.yaml: slurm: time 30 (minutes) ends before the soak*"])


def test_a_sample_the_stopping_run_refused_is_no_fault_of_the_node() -> None:
    """Ctrl-C while telemetry is sampled: the gate refuses the command (RunStopped); that says nothing of the node."""
    from types import SimpleNamespace

    from pytest_fabric.run.stopgate import RunStopped
    from pytest_fabric.session.soak import Sampler, SoakLog

    class Refused:
        name = "node01"

        def run(self, command: str, **_: object) -> None:
            raise RunStopped(self.name, command)

    log = SoakLog(60.0, 1.0, None)
    state = SimpleNamespace(cluster=SimpleNamespace(nodes=[Refused()], gate=SimpleNamespace(stopping=True)),
                            batches=SimpleNamespace(fanout=4))
    Sampler(state, log).sample_once()  # type: ignore[arg-type]
    assert log.samples == []
