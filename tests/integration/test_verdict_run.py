"""The run's verdict from real runs on the simulated cluster: the four outputs agree, and say ACCEPT only
when every check the profile sets ran on every subject and passed.

Each run writes all four outputs (terminal, ``--html``, ``--junitxml``, ``--conformance-json``) and every
assertion reads all four, since a verdict that one output gets wrong is the fault reported in issue 10.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from simcluster import NodeBreaker, SimCluster

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim.yaml"


@dataclass
class Outputs:
    terminal: str
    record: dict  # type: ignore[type-arg]
    junit: dict[str, str]  # testsuite property -> value
    html: str

    @property
    def banner(self) -> str:
        m = re.search(r'<div class="fabric-verdict ([a-z-]+)" id="fabric-verdict">([A-Z ]+)<small>', self.html)
        assert m, "no verdict banner in the HTML report"
        return f"{m.group(1)} {m.group(2)}"


def _output_args(where: Path) -> list[str]:
    return [f"--conformance-json={where / 'record.json'}", f"--junitxml={where / 'junit.xml'}",
            f"--html={where / 'report.html'}", "--self-contained-html"]


def _read_outputs(where: Path, terminal: str) -> Outputs:
    suite = ET.parse(where / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    return Outputs(
        terminal=terminal,
        record=json.loads((where / "record.json").read_text()),
        junit={p.get("name", ""): p.get("value", "") for p in suite.iter("property")},
        html=(where / "report.html").read_text(),
    )


def _run(pytester: pytest.Pytester, inventory: Path, *args: str) -> Outputs:
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider",
        *_output_args(pytester.path), *args, timeout=300,
    )
    return _read_outputs(pytester.path, result.stdout.str())


def _our_lines(terminal: str) -> list[str]:
    """The lines of the fabric conformance section, up to pytest's own closing line."""
    lines = terminal.splitlines()
    start = next(i for i, line in enumerate(lines) if "fabric conformance:" in line)
    # pytest's closing line, or pytest-html's "- Generated html report" that may come first.
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(("=", "- "))), len(lines))
    return lines[start + 1:end]


def test_a_selected_subset_is_incomplete_in_all_four_outputs(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    # Every MTU is right, but -k left out every other check the profile sets: that is not ACCEPT.
    n = len(simcluster.nodes)
    out = _run(pytester, sim_inventory, "-k", "test_mtu")
    pairs = n * (n - 1) // 2
    # The header folds the inventory's nodes into a nodeset, as srun -w takes them.
    assert f"fabric: {n} nodes: node[01-{n:02d}]" in out.terminal.splitlines()
    lines = _our_lines(out.terminal)
    assert lines[-2].startswith("INCOMPLETE: 0 failed, 0 errored, "), lines
    assert f"({n} passed; {n} checks on {n} nodes)" in lines[-2]
    assert lines[-1] == "nodes to send back: none"
    # What did not run, and why, with counts per check.
    assert any(line.startswith("  deselected") and f"inter_node.tcp_throughput ({pairs})" in line for line in lines), lines

    run = out.record["run"]
    assert (run["verdict"], run["status"]) == ("incomplete", "complete")
    assert run["not_run"]["deselected"]["inter_node.tcp_throughput"] == pairs
    assert run["not_run"]["deselected"]["storage.sequential_read"] >= n
    assert "inter_node.mtu" not in run["not_run"]["deselected"]
    assert out.junit["fabric_verdict"] == "incomplete" and out.junit["fabric_status"] == "complete"
    assert out.banner == "incomplete INCOMPLETE"
    assert "inter_node.tcp_throughput" in out.html and "nodes to send back: none" in out.html


def test_failed_nodes_are_folded_into_a_nodeset_to_send_back(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path, break_node: NodeBreaker
) -> None:
    wrong = [simcluster.nodes[2].name, simcluster.nodes[5].name]  # node03, node06
    with break_node.mtu(wrong[0], 1280), break_node.mtu(wrong[1], 1280):
        out = _run(pytester, sim_inventory, "-k", "test_mtu")
    lines = _our_lines(out.terminal)
    assert lines[-2].startswith("REJECT: 2 failed, 0 errored"), lines
    assert lines[-1] == "nodes to send back: node[03,06]"
    assert out.record["run"]["verdict"] == "reject" and out.junit["fabric_verdict"] == "reject"
    assert out.record["run"]["send_back"] == "node[03,06]"
    assert out.banner == "reject REJECT" and "nodes to send back: node[03,06]" in out.html


def test_an_interrupted_run_is_interrupted_in_all_four_outputs(
    simcluster: SimCluster, sim_inventory: Path, tmp_path: Path
) -> None:
    profile = tmp_path / "long.yaml"
    profile.write_text("name: long\ninter_node:\n  tcp_throughput: {min: 1 Gb/s, streams: 1, duration: 4 s}\n")
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "--cluster", str(sim_inventory), "--profile", str(profile),
         "-p", "no:cacheprovider", *_output_args(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(
            "iperf3 -c" in cmd for node in simcluster.nodes for _, cmd in simcluster.processes(node)
        ):
            time.sleep(0.1)
        run.send_signal(signal.SIGINT)  # Ctrl-C in the middle of the first round
        terminal, _ = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    out = _read_outputs(tmp_path, terminal)
    lines = _our_lines(out.terminal)
    assert lines[-2].startswith("INTERRUPTED: "), lines
    assert not any(line.startswith("ACCEPT") for line in out.terminal.splitlines())
    run_ = out.record["run"]
    assert (run_["verdict"], run_["status"]) == ("interrupted", "interrupted")
    # What never ran is listed: the pairs of the later rounds at least.
    assert run_["not_run"]["unreported"]["inter_node.tcp_throughput"] > 0
    assert out.junit["fabric_verdict"] == "interrupted" and out.junit["fabric_status"] == "interrupted"
    assert out.banner == "interrupted INTERRUPTED"
    assert 'class="fabric-verdict accept"' not in out.html


def test_a_profile_that_sets_no_check_is_a_usage_error(pytester: pytest.Pytester) -> None:
    inventory = pytester.path / "inv.yaml"
    inventory.write_text("nodes: [{name: local, host: localhost}]\n")
    profile = pytester.path / "only-a-name.yaml"
    profile.write_text("name: only-a-name\ndescription: nothing else\n")
    result = pytester.runpytest("--cluster", str(inventory), "--profile", str(profile))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{profile}: profile only-a-name sets no check*"])
    assert "ACCEPT" not in result.stdout.str() and "Traceback" not in result.stderr.str()
