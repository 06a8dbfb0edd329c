"""The report modules driven through pytest's command line, with a stand-in for the plugin core.

``pytest_fabric.report.testing.write_fake_project`` writes a conftest that does
what the core does for reporting (run info in the stash, a record on each test
report) and one test per record; these tests run it with pytester and read
back the terminal output, the JSON record, the HTML page and the JUnit XML.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from importlib import resources
from typing import Any

import pytest

from pytest_fabric.report.testing import make_check, sample_cluster, write_fake_project
from pytest_fabric.report.verify import verify_file

# Dependencies first: a plugin module imported by another before its own -p cannot be assert-rewritten.
REPORT_PLUGINS = ["evidence", "compare", "collect", "record_json", "terminal", "html", "junit"]
PLUGIN_ARGS = [arg for m in REPORT_PLUGINS for arg in ("-p", f"pytest_fabric.report.{m}")]
EVIL = '<script>alert("x")</script>'


def _project(pytester: pytest.Pytester, n: int = 4, **kw: Any) -> list[dict[str, Any]]:
    info, checks = sample_cluster(n, **kw)
    checks.append(make_check("gpu_count", f"{EVIL}", "failed", value=7, expected=8, nodes=["node01"],
                             message=f"gpu_count on {EVIL}: 7, expected 8", layer="intra_node",
                             evidence=[("node01", "nvidia-smi -L", 0, f"GPU 0: {EVIL}\nEvil line\n")]))
    write_fake_project(pytester.path, info, checks)
    return checks


def _blob(page: str) -> dict[str, Any]:
    """pytest-html's per-test data: JSON, HTML-escaped into an attribute."""
    m = re.search(r'data-jsonblob="([^"]*)"', page)
    assert m
    return json.loads(html.unescape(m.group(1)))


def test_outputs_of_a_rejected_run(pytester: pytest.Pytester) -> None:
    checks = _project(pytester)
    result = pytester.runpytest(*PLUGIN_ARGS, "--html=report.html", "--self-contained-html",
                                "--conformance-json=out/record.json", "--junitxml=junit.xml", "--evidence-dir=out/ev")
    result.assert_outcomes(passed=7, failed=3, skipped=1, xfailed=1, errors=4)

    # Terminal: worst checks per layer, errors with their cause, and the verdict line last of ours.
    result.stdout.fnmatch_lines([
        "*= fabric conformance: demo-pod vs hdr200 =*",
        "intra_node:",
        "  FAILED gpu_count <script>*: 7, expected >= 8 (-12.5%)",
        "  ERROR  nvlink_bandwidth node04: node04 unreachable: ssh node04 true: connection refused; check sshd*",
        "inter_node:",
        "  FAILED tcp_throughput node01<->node03: 120.5 Gb/s, expected >= 180 Gb/s (-33.1%)",
        # One node down errs every pair it is in: one line for the one cause.
        "  ERROR  tcp_throughput node04 with node[[]01-03] (3 pairs): node04 unreachable*",  # [[]: a literal [
        "waived: port_rate node03:mlx5_0/1 (cable swap scheduled, ticket OPS-1234)",
        "conformance record: out/record.json",
        "REJECT: 3 failed, 4 errored (7 passed, 1 waived, 1 skipped; 16 checks on 4 nodes)",
        # node01's GPU count failed, node03 failed every pair it is in; node04 errored everything:
        # not measured, listed apart (issue 29)
        "nodes to send back: node[[]01,03]",
        "nodes not measured (not sent back): node04",
    ])

    # JSON record: schema, seal, evidence files, verdict.
    record = json.loads((pytester.path / "out/record.json").read_text())
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(record, json.loads(resources.files("pytest_fabric.report").joinpath("record.schema.json").read_text()))
    assert verify_file(pytester.path / "out/record.json") == (True, [])
    assert record["run"]["verdict"] == "reject" and record["run"]["status"] == "complete"
    assert record["run"]["counts"] == {"passed": 7, "failed": 3, "error": 4, "waived": 1, "skipped": 1}
    assert record["run"]["not_run"] == {"errored": {"inter_node.tcp_throughput": 3, "intra_node.nvlink_bandwidth": 1}}
    assert record["run"]["send_back"] == "node[01,03]" and list(record["run"]["not_measured"]) == ["node04"]
    assert len(record["checks"]) == len(checks)
    by_subject = {c["subject"]: c for c in record["checks"]}
    assert by_subject["node01<->node04"]["outcome"] == "error"
    assert by_subject["node03:mlx5_0/1"]["outcome"] == "waived"
    ev = by_subject[EVIL]["evidence"][0]
    assert (pytester.path / "out" / ev["stdout_file"]).read_text() == f"GPU 0: {EVIL}\nEvil line\n"

    # JUnit: the run-level verdict on the testsuite, beside pytest's own testcases.
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["fabric_verdict"] == "reject" and props["fabric_failed"] == "3" and props["fabric_nodes"] == "4"
    assert props["fabric_profile_sha256"] == "ab" * 32
    assert props["fabric_status"] == "complete" and props["fabric_send_back"] == "node[01,03]"
    assert props["fabric_not_run_errored"] == "4"

    # HTML: verdict on top, columns, tables, heatmaps, evidence; everything escaped.
    page = (pytester.path / "report.html").read_text()
    assert "<title id=\"head-title\">Fabric conformance: demo-pod vs hdr200</title>" in page
    assert re.search(r'<div class="fabric-verdict reject" id="fabric-verdict">REJECT<small>3 failed, 4 errored', page)
    for col in ("measured", "margin"):
        assert f'<th class="sortable" data-column-type="{col}">' in page
    for col in ("expected", "outcome"):  # per check or the Result's: not worth a second copy on every row
        assert f'<th data-column-type="{col}">' in page
    assert 'id="fabric-nodes"' in page and "node fault" in page and "cable swap scheduled" in page
    assert "<svg" in page and "fabric-cell-failed" in page and "tcp_throughput (Gb/s): node x node" in page
    assert "GPU pairs within each node" in page and "iperf3 3.12" in page and "abababab" in page
    assert "<script>alert" not in page
    assert '<p class="fabric-send-back" id="fabric-send-back">nodes to send back: node[01,03]</p>' in page
    assert 'id="fabric-not-measured">nodes not measured (not sent back): node04</p>' in page
    tests = _blob(page)["tests"]
    row = tests[next(k for k in tests if k.endswith("test_check[6]"))][0]
    assert "<td class=col-measured><i>21021.20500</i>120.5 Gb/s</td>" in row["resultsTableRow"]
    assert row["margin"] == "<i>01006.69444</i>-33.1%"  # a hidden sort key in front of the figure
    assert row["log"].startswith("node01&lt;-&gt;node03: 120.5 Gb/s, expected &gt;= 180 Gb/s")  # the message, once
    evidence = next(e["content"] for e in row["extras"] if e["format_type"] == "html")
    assert "120.5 Gb/s, expected" not in evidence
    # An output many checks share (the server's) is shown once, escaped; the others link to one copy of it.
    assert "iperf3 -c node03 -P 8 -t 10 -J" in evidence and "<a href=#fabric-s1>stdout " in evidence
    shown = [e["content"] for rows in tests.values() for r in rows for e in r.get("extras", [])
             if "&lt;server output &amp; stuff>" in e["content"]]
    assert len(shown) == 1
    assert '<div id="fabric-s1">' in page and page.count("&lt;server output &amp; stuff>") == 1
    # Where an expected value came from is said once per check, not on every row.
    assert "vendor datasheet" not in evidence
    assert page.count("vendor datasheet") == len({(c["layer"], c["check"]) for c in checks if c.get("expected")})
    assert "<code>inter_node.tcp_throughput.min</code>" in page
    evil_row = tests[next(k for k in tests if k.endswith(f"test_check[{len(checks) - 1}]"))][0]
    evil_html = "".join(evil_row["resultsTableRow"]) + evil_row["log"] + "".join(e["content"] for e in evil_row["extras"])
    assert "<script>" not in evil_html and "&lt;script>" in evil_html


def test_accept_and_waiver(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(3, slow=None, down=None)
    checks.append(make_check("port_rate", "node02:mlx5_0/1", "waived", value=100, unit="Gb/s", expected=200,
                             waiver="known slow cable"))
    write_fake_project(pytester.path, info, checks)
    result = pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=r.json", "--html=r.html")
    result.stdout.fnmatch_lines(["waived: port_rate node02:mlx5_0/1 (known slow cable)",
                                 "ACCEPT: 0 failed, 0 errored (*1 waived*)", "nodes to send back: none"])
    assert json.loads((pytester.path / "r.json").read_text())["run"]["verdict"] == "accept"
    assert 'class="fabric-verdict accept"' in (pytester.path / "r.html").read_text()


def test_without_cluster_nothing_happens(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(2)
    write_fake_project(pytester.path, info, checks)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace("config.stash[RUN_INFO_KEY] = RunInfo(**RUN)", "pass"))
    result = pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=r.json", "--html=r.html", "--junitxml=j.xml")
    assert "fabric conformance" not in result.stdout.str()
    assert not (pytester.path / "r.json").exists()
    page = (pytester.path / "r.html").read_text()
    assert "fabric-verdict" not in page and 'data-column-type="layer"' not in page
    assert "fabric_verdict" not in (pytester.path / "j.xml").read_text()


def test_compare_with_previous_record(pytester: pytest.Pytester) -> None:
    info, good = sample_cluster(4, slow=None, down=None)
    write_fake_project(pytester.path, info, good)
    pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=prev.json").assert_outcomes(passed=len(good) - 1, skipped=1)
    _, now = sample_cluster(4, slow="node03", down=None)
    write_fake_project(pytester.path, info, now)
    result = pytester.runpytest(*PLUGIN_ARGS, "--compare=prev.json", "--conformance-json=now.json", "--html=r.html")
    # 3 tcp pairs with node03 newly failing; 3 latency pairs with node03 got worse; the waived port check is new.
    result.stdout.fnmatch_lines(["compared with prev.json: 3 regressed, 3 newly failing, 11 unchanged, 1 new",
                                 "REJECT: 3 failed, 0 errored*"])
    record = json.loads((pytester.path / "now.json").read_text())
    assert record["run"]["compared_with"] == "prev.json"
    tcp = next(c for c in record["checks"] if c["subject"] == "node01<->node03" and c["check"] == "tcp_throughput")
    assert tcp["previous"]["text"] == "newly failing (was passed): was 191.2 Gb/s, now 120.5 Gb/s (-37.0%)"
    page = (pytester.path / "r.html").read_text()
    assert 'data-column-type="change"' in page and "was 191.2 Gb/s, now 120.5 Gb/s (-37.0%)" in page


def test_compare_with_a_record_of_another_profile_warns(pytester: pytest.Pytester) -> None:
    info, good = sample_cluster(4, slow=None, down=None)
    write_fake_project(pytester.path, info, good)
    pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=prev.json").assert_outcomes(passed=len(good) - 1, skipped=1)
    info.profile_name, info.profile_sha256 = "roce-small", "cd" * 32
    write_fake_project(pytester.path, info, good)
    result = pytester.runpytest(*PLUGIN_ARGS, "--compare=prev.json", "--conformance-json=now.json")
    result.stdout.fnmatch_lines(["compared with prev.json: * -- WARNING, not the same question: "
                                 "the previous run used profile hdr200, this one roce-small"])
    record = json.loads((pytester.path / "now.json").read_text())
    assert record["run"]["comparison_warnings"] == ["the previous run used profile hdr200, this one roce-small"]
    assert verify_file(pytester.path / "now.json") == (True, [])


def test_bad_compare_tolerance_is_a_usage_error(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(2)
    write_fake_project(pytester.path, info, checks)
    pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=prev.json")
    result = pytester.runpytest(*PLUGIN_ARGS, "--compare=prev.json", "--compare-tolerance=dns_resolve=quick")
    result.stderr.fnmatch_lines(["*--compare-tolerance dns_resolve=quick: write PERCENT, CHECK=PERCENT or CHECK=QUANTITY*"])


def test_bad_previous_record_is_a_usage_error(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(2)
    write_fake_project(pytester.path, info, checks)
    (pytester.path / "prev.json").write_text("{not json")
    result = pytester.runpytest(*PLUGIN_ARGS, "--compare=prev.json")
    result.stderr.fnmatch_lines(["*--compare prev.json: not a readable pytest-fabric record*"])


def test_interrupted_run_leaves_a_valid_record(pytester: pytest.Pytester) -> None:
    checks = _project(pytester)
    pytester.makepyfile(test_zz_interrupt="def test_stop():\n    raise KeyboardInterrupt\n")
    # In a subprocess: in-process, the KeyboardInterrupt would stop this test session too.
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, "--conformance-json=r.json", "--junitxml=j.xml", "--html=r.html")
    record = json.loads((pytester.path / "r.json").read_text())
    assert record["run"]["status"] == "interrupted" and len(record["checks"]) == len(checks)
    assert verify_file(pytester.path / "r.json")[0]
    # Stopped is stopped, whatever had failed by then: all four outputs say so.
    assert record["run"]["verdict"] == "interrupted"
    result.stdout.fnmatch_lines(["INTERRUPTED: 3 failed, 4 errored*"])
    assert _suite_props(pytester.path / "j.xml")["fabric_verdict"] == "interrupted"
    assert 'class="fabric-verdict interrupted" id="fabric-verdict">INTERRUPTED<' in (pytester.path / "r.html").read_text()


def _suite_props(path: Any) -> dict[str, str]:
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite is not None
    return {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}


def test_a_run_stopped_by_maxfail_is_interrupted(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(3, slow="node02", down=None)
    write_fake_project(pytester.path, info, checks)
    result = pytester.runpytest(*PLUGIN_ARGS, "-x", "--conformance-json=r.json", "--junitxml=j.xml", "--html=r.html")
    result.stdout.fnmatch_lines(["INTERRUPTED: 1 failed, 0 errored*"])
    assert "REJECT" not in result.stdout.str() and "ACCEPT" not in result.stdout.str()
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert (run["verdict"], run["status"]) == ("interrupted", "interrupted")
    assert _suite_props(pytester.path / "j.xml")["fabric_verdict"] == "interrupted"
    assert 'class="fabric-verdict interrupted"' in (pytester.path / "r.html").read_text()


def test_a_run_that_measured_nothing_has_no_verdict(pytester: pytest.Pytester) -> None:
    info, _ = sample_cluster(2)
    checks = [make_check("tcp_throughput", "node01<->node02", "error", expected=180,
                         message="node node02: unreachable: ssh node02 true: connection refused"),
              make_check("download", "node01:mirror", "skipped", message="profile has no egress.download")]
    write_fake_project(pytester.path, info, checks)
    result = pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=r.json", "--junitxml=j.xml", "--html=r.html")
    result.stdout.fnmatch_lines(["NO VERDICT: 0 failed, 1 errored, nothing measured (1 skipped; 2 checks on 2 nodes)",
                                 "nodes to send back: none",
                                 "nodes not measured (not sent back): node02"])  # node02's error, not node01's
    assert "ACCEPT" not in result.stdout.str()
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert (run["verdict"], run["status"]) == (None, "complete")
    assert _suite_props(pytester.path / "j.xml")["fabric_verdict"] == "none"
    page = (pytester.path / "r.html").read_text()
    assert 'class="fabric-verdict none" id="fabric-verdict">NO VERDICT<' in page and "Nothing was measured" in page


def test_xdist_controller_writes_everything_once(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    checks = _project(pytester)
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, "-n", "2", "--conformance-json=r.json", "--html=r.html",
                                           "--evidence-dir=ev")
    result.assert_outcomes(passed=7, failed=3, skipped=1, xfailed=1, errors=4)
    record = json.loads((pytester.path / "r.json").read_text())
    assert sorted(c["subject"] for c in record["checks"]) == sorted(c["subject"] for c in checks)
    assert verify_file(pytester.path / "r.json") == (True, [])
    assert [p.name for p in pytester.path.glob(".*tmp")] == []
    page = (pytester.path / "r.html").read_text()
    assert page.count('class="fabric-verdict reject"') == 1 and "iperf3 -c node03" in page
    result.stdout.fnmatch_lines(["REJECT: 3 failed, 4 errored*"])


def test_deselected_checks_make_the_run_incomplete(pytester: pytest.Pytester) -> None:
    info, checks = sample_cluster(3, slow=None, down=None)
    write_fake_project(pytester.path, info, checks)
    # Leave out two of the checks: the rest pass, and the run is still not ACCEPT.
    result = pytester.runpytest(*PLUGIN_ARGS, "-k", "not test_check[3] and not test_check[4]",
                                "--conformance-json=r.json")
    result.stdout.fnmatch_lines(["not run (the verdict counts none of these):",
                                 "  deselected (-k, -m, --lf, --deselect): inter_node.* (*)*",
                                 "INCOMPLETE: 0 failed, 0 errored, 2 not run*"])
    assert json.loads((pytester.path / "r.json").read_text())["run"]["verdict"] == "incomplete"


def test_xdist_workers_send_what_they_deselected(pytester: pytest.Pytester) -> None:
    # Under -n the controller collects nothing: only the workers know what -k left out.
    pytest.importorskip("xdist")
    info, checks = sample_cluster(3, slow=None, down=None)
    write_fake_project(pytester.path, info, checks)
    deselected = [checks[3], checks[4]]
    result = pytester.runpytest_subprocess(*PLUGIN_ARGS, "-n", "2", "-k", "not test_check[3] and not test_check[4]",
                                           "--conformance-json=r.json", "--junitxml=j.xml")
    result.stdout.fnmatch_lines(["INCOMPLETE: 0 failed, 0 errored, 2 not run*"])
    run = json.loads((pytester.path / "r.json").read_text())["run"]
    assert run["verdict"] == "incomplete"
    expected: dict[str, int] = {}
    for c in deselected:
        expected[f"{c['layer']}.{c['check']}"] = expected.get(f"{c['layer']}.{c['check']}", 0) + 1
    assert run["not_run"]["deselected"] == expected
    assert _suite_props(pytester.path / "j.xml")["fabric_verdict"] == "incomplete"


def test_evidence_outside_the_records_folder_is_warned_at_start(pytester: pytest.Pytester) -> None:
    # verify reads evidence only from one folder inside the record's (docs/signing.md): say so when
    # the run starts, not when the other party cannot check the record.
    _project(pytester, 2)
    result = pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=out/record.json", "--evidence-dir=ev")
    result.stdout.fnmatch_lines(["*--evidence-dir ev is outside the folder of --conformance-json out/record.json*"])
    assert verify_file(pytester.path / "out/record.json")[0] is False
    inside = pytester.runpytest(*PLUGIN_ARGS, "--conformance-json=out/record.json", "--evidence-dir=out/ev")
    assert "is outside the folder" not in inside.stdout.str()
