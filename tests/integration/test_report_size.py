"""The HTML report of a run with many errors stays small: bytes per check, and every error still said.

A stand-in run (the core replaced by ``write_fake_project``) shaped like 64 simulated nodes without
RDMA, scaled down to 16: one missing tool errs six checks on every node and both RDMA checks of
every pair, every node's attribution quotes two of its pairs (its own name first or second), every
pair's iperf3 prints a long JSON and each end's probes print what other pairs print too.
pytest-html stores every row it lists escaped twice; what the page repeated per row was most of
an 8.7 MB report on 64 nodes.  One pytest run for the module, a few seconds.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from pytest_fabric.report.testing import make_check, sample_run_info, write_fake_project

PLUGINS = [arg for m in ("evidence", "collect", "record_json", "html") for arg in ("-p", f"pytest_fabric.report.{m}")]
NODES = [f"node{i:02d}" for i in range(1, 17)]
PROBE = ('d=/sys/class/net/eth0; echo "type $(cat $d/type 2>/dev/null)"; echo "speed $(cat $d/speed 2>/dev/null)"; '
         'p=$(( $(cat $d/dev_port 2>/dev/null || echo 0) + 1 ))')
#: the whole file over the checks of the run: 3.9 KB before rows were written small, 1.2 KB after
BYTES_PER_CHECK = 1_500


def _iperf3_json(a: str, b: str, gbps: float) -> str:
    """An ``iperf3 -J`` client output of the usual length (~13 KB), quotes and all."""
    intervals = [{"streams": [{"socket": 5 + s, "start": t, "end": t + 1, "bytes": 1_000_000 + t * 7 + s,
                               "bits_per_second": gbps * 1e9 / 8, "retransmits": s} for s in range(8)]}
                 for t in range(2)]
    end = {"sum_sent": {"bits_per_second": gbps * 1e9, "retransmits": 29},
           "sum_received": {"bits_per_second": gbps * 0.99e9}, "cpu_utilization_percent": {"host_total": 4.26}}
    return json.dumps({"start": {"connecting_to": {"host": b}, "peer": a}, "intervals": intervals, "end": end},
                      indent="\t")


def _ibstat_missing(check: str, subject: str, node: str, nodes: list[str]) -> dict[str, Any]:
    return make_check(check, subject, "error", nodes=nodes, expected=100, unit="Gb/s",
                      message=f"node {node}: ibstat: command not found\ncommand: ibstat\n"
                              f"fix: install infiniband-diags on {node}")


def _records() -> list[dict[str, Any]]:
    """Per node six port checks and the attribution errored, two egress checks passed; per pair
    (each node with four peers) the RDMA checks errored and TCP measured, failing on node03's pairs."""
    records = []
    pairs = [(NODES[i], NODES[(i + step) % len(NODES)]) for step in (1, 5) for i in range(len(NODES))]
    for i, node in enumerate(NODES):
        records += [_ibstat_missing(check, node, node, [node])
                    for check in ("link_layer", "ports", "port_state", "port_rate", "roce", "error_counters")]
        # Each node's attribution quotes two of its pairs, as the rounds made them: its own name first or second.
        mine = [p for p in pairs if node in p][:2]
        records.append(make_check(
            "attribution", node, "error", nodes=[node],
            message=f"node {node}: rdma_bandwidth: no pair with {node} was measured ("
                    + "; ".join(f"{a}<->{b}: node {a}: ibstat: command not found" for a, b in mine)
                    + f"), so there is nothing to attribute\nfix: make every pair with {node} measurable and run again"))
        for check, value, probe in (("dns_resolve", 4.9, 's=$(date +%s%N); getent ahosts 10.0.0.1 >/dev/null; rc=$?; '
                                                         'e=$(date +%s%N); echo "$rc $((e - s))"'),
                                    ("connect_latency", 0.2, "a=$(getent ahosts 10.0.0.1 | awk 'NR==1 {print $1; exit}'); "
                                                             'if [ -z "$a" ]; then echo unresolved; exit 0; fi')):
            records.append(make_check(check, f"{node}:mirror", "passed", value=value, unit="ms", expected=100, op="<=",
                                      nodes=[node], layer="egress",
                                      message=f"{node}:mirror: measured {value} ms, meets <= 100 ms; from {node}",
                                      evidence=[(node, probe, 0, f"0 {4899401 + i}\n")]))
    for a, b in pairs:
        records += [_ibstat_missing(check, f"{a}<->{b}", a, [a, b]) for check in ("rdma_bandwidth", "rdma_latency")]
        gbps = 1.09 if "node03" in (a, b) else 95.2
        records.append(make_check(
            "tcp_throughput", f"{a}<->{b}", "failed" if gbps < 90 else "passed", value=gbps, unit="Gb/s",
            expected=90, nodes=[a, b],
            message=f"{a}<->{b}: measured {gbps} Gb/s, expected >= 90 Gb/s; iperf3 {a} -> {b}, 8 streams, 2 s",
            evidence=[(a, f"iperf3 -c {b} -p 5201 -t 2 -P 8 -J", 0, _iperf3_json(a, b, gbps)),
                      (b, "iperf3 -s -1 -p 5201", 0, f"Server listening on 5201\nAccepted connection from {a}\n" * 30),
                      (a, "ip -o addr show", 0, f"2: eth0    inet 10.0.0.{NODES.index(a) + 11}/24 scope global eth0\n"),
                      (b, "ip -o addr show", 0, f"2: eth0    inet 10.0.0.{NODES.index(b) + 11}/24 scope global eth0\n"),
                      (a, PROBE, 0, "type 1\nspeed 100000\n"), (b, PROBE, 0, "type 1\nspeed 100000\n")]))
    return records


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The page and pytest-html's per-test data of one stand-in run."""
    project = tmp_path_factory.mktemp("size")
    records = _records()
    write_fake_project(project, sample_run_info(NODES), records)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *PLUGINS,
                    "--html=report.html", "--self-contained-html"], cwd=project, capture_output=True,
                   check=False, timeout=300)
    page = (project / "report.html").read_text()
    blob = re.search(r'data-jsonblob="([^"]*)"', page)
    assert blob, "no pytest-html data in the page"
    return page, json.loads(html.unescape(blob.group(1))), records


def test_bytes_per_check_stay_small(report: tuple[str, dict[str, Any], list[dict[str, Any]]]) -> None:
    page, data, records = report
    per_check = len(page.encode()) / len(records)
    assert per_check < BYTES_PER_CHECK, f"{per_check:.0f} bytes a check, {len(page.encode()) / 1e6:.2f} MB"
    # pytest-html lists no test it was told to leave out, not even as an empty entry.
    assert all(data["tests"].values())


def test_every_error_is_said_with_its_node_command_and_fix(report: tuple[str, dict[str, Any], list[dict[str, Any]]]) -> None:
    page, data, records = report
    assert "Traceback" not in page
    # Once per cause, the nodes folded, above the table; each errored check listed by subject there.
    assert "node node[01-16]: ibstat: command not found; fix: install infiniband-diags on node[01-16]" in page
    assert "link_layer: node[01-16]<br>port_rate: node[01-16]" in page
    assert "rdma_bandwidth: node01&lt;-&gt;node[02,06],node02&lt;-&gt;node[03,07]," in page  # each pair
    # The first error of the cause is a row of the results table whose log is its whole message.
    errors = [t for tests in data["tests"].values() for t in tests if t["result"] == "Error"]
    logs = "".join(t["log"] for t in errors)
    assert "node node01: ibstat: command not found\ncommand: ibstat\nfix: install infiniband-diags on node01" in logs
    assert len(errors) == 2  # one per cause: ibstat on every node, and the attributions
    assert all("Checks per layer</a>, with every check it errored" in e["extras"][0]["content"] for e in errors)


def test_attributions_quoting_pairs_either_way_round_are_one_cause(
        report: tuple[str, dict[str, Any], list[dict[str, Any]]]) -> None:
    page, _, _ = report
    causes = re.findall(r'<tr class="fabric-cause" id="fabric-cause-\w+"><td>([^<]*)</td>', page)
    assert causes.count("attribution") == 1, causes
    assert "attribution: node[01-16]" in page
