"""A report from a real run: the simulated cluster, one node shaped and one node down.

Drives ``pytest --cluster ... --profile ...`` (the real core, SSH, iperf3) with
the report modules, then reads the record, the terminal summary and the page.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from simcluster import NodeBreaker, SimCluster

from pytest_fabric.report.verify import verify_file

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim.yaml"
PLUGINS = ["evidence", "compare", "collect", "record_json", "terminal", "html", "junit"]


def test_report_of_a_shaped_and_a_down_node(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path, break_node: NodeBreaker
) -> None:
    names = [n.name for n in simcluster.nodes]
    shaped, down = names[2], names[5]
    args = [arg for m in PLUGINS for arg in ("-p", f"pytest_fabric.report.{m}")]
    with break_node.shaped(shaped, 1000), break_node.stopped(down):
        result = pytester.runpytest_subprocess(
            "--cluster", str(sim_inventory), "--profile", str(PROFILE), "-p", "no:cacheprovider", *args,
            "-k", "tcp_throughput", "--conformance-json=record.json", "--evidence-dir=evidence",
            "--html=report.html", "--self-contained-html", timeout=300,
        )
    pairs = list(itertools.combinations(names, 2))
    with_down = [p for p in pairs if down in p]
    with_shaped = [p for p in pairs if shaped in p and down not in p]
    outcomes = result.parseoutcomes()
    assert (outcomes["failed"], outcomes["errors"]) == (len(with_shaped), len(with_down))
    result.stdout.fnmatch_lines([
        "*= fabric conformance: *",
        f"  FAILED tcp_throughput *{shaped}*: * Gb/s, expected >= * Gb/s (-*%)",
        # One node down errs every pair it is in: one line, its peers folded into a nodeset.
        f"  ERROR  tcp_throughput {down} with node[[]01-05,07-08] ({len(with_down)} pairs): *{down}*",
        "*fix: *",
        f"REJECT: {len(with_shaped)} failed, {len(with_down)} errored*",
        # The shaped node failed every pair it is in: sent back; the stopped one errored them: not
        # measured, listed apart (issue 29)
        "nodes to send back: node03",
        "nodes not measured (not sent back): node06",
    ])

    record = json.loads((pytester.path / "record.json").read_text())
    assert verify_file(pytester.path / "record.json") == (True, [])
    assert record["run"]["verdict"] == "reject" and record["run"]["node_count"] == len(names)
    by_outcome = {o: sorted(c["subject"] for c in record["checks"] if c["outcome"] == o) for o in ("failed", "error")}
    assert all(shaped in s for s in by_outcome["failed"]) and len(by_outcome["failed"]) == len(with_shaped)
    assert all(down in s for s in by_outcome["error"]) and len(by_outcome["error"]) == len(with_down)
    measured = [c for c in record["checks"] if c["outcome"] in ("passed", "failed")]
    # Every measured pair names its commands, and the iperf3 client's JSON is kept as a file.
    assert measured and all(any(e["command"].startswith("iperf3 -c") and "stdout_file" in e for e in c["evidence"])
                            for c in measured)

    page = (pytester.path / "report.html").read_text()
    assert 'class="fabric-verdict reject"' in page and "fabric-cell-failed" in page and "fabric-cell-error" in page
