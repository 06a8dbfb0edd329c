"""HTML fragments of the report page: errors with their reason, grouped by cause; evidence cut and shown once."""

from __future__ import annotations

import re

from pytest_fabric.report import page
from pytest_fabric.report.testing import make_check, sample_run_info

CURL = "curl -sS -o /dev/null --connect-timeout 10 --max-time 30 -w '\\npytest-fabric-curl %{http_code}' http://m/x"


def _missing(check: str, node: str) -> dict[str, object]:
    return make_check(check, node, "error", nodes=[node], layer="intra_node",
                      message=f"node {node}: nvidia-smi: command not found\ncommand: nvidia-smi topo -m\n"
                              f"fix: install the NVIDIA driver (nvidia-utils-<version>) on {node}")


def _rows(html: str) -> list[str]:
    return re.findall(r"<tr[^>]*>(.*?)</tr>", html)


def test_errors_of_one_cause_are_one_row_with_the_reason() -> None:
    errors = [_missing(check, f"gpu{i:02d}") for check in ("gpu_interconnect", "gpu_count") for i in range(1, 65)]
    other = make_check("mtu", "gpu07", "error", nodes=["gpu07"], layer="intra_node", message="node gpu07: ip: exited 2")
    html = page.layer_tables([*errors, other])
    problems = html.split('<table class="fabric-table fabric-problems">')[1].split("</table>")[0]
    rows = _rows(problems)[1:]  # after the header
    assert len(rows) == 2
    assert "gpu_count, gpu_interconnect" in rows[0] and "on gpu[01-64] (128 checks)" in rows[0]
    assert "node gpu[01-64]: nvidia-smi: command not found; fix: install the NVIDIA driver" in rows[0]
    assert "command:" not in rows[0]  # the reason is what happened and the fix
    assert "ip: exited 2" in rows[1]
    assert "more problems" not in html


def test_the_nodes_table_gives_the_reason_not_the_command_line() -> None:
    info = sample_run_info(["gpu01"])
    checks = [make_check("download", "gpu01:m/x", "error", nodes=["gpu01"], layer="egress",
                         message=f"node gpu01: http://m/x answered HTTP 404 to gpu01\ncommand: {CURL}\n"
                                 "fix: check the URL in the inventory's egress.targets"),
              _missing("gpu_count", "gpu01"), _missing("gpu_interconnect", "gpu01")]
    html = page.node_table(info, checks)
    assert "pytest-fabric-curl" not in html and "--max-time" not in html
    assert "answered HTTP 404 to gpu01; fix: check the URL" in html
    # One cause on one node: said once for both checks.
    assert html.count("nvidia-smi: command not found") == 1 and "gpu_count, gpu_interconnect" in html


def test_evidence_is_cut_to_its_tail_and_shown_once_per_page() -> None:
    big = "x" * 50_000 + "THE END"
    a = make_check("tcp_throughput", "a<->b", "failed", nodes=["a", "b"],
                   evidence=[("a", "iperf3 -c b", 0, big), ("b", "iperf3 -s", 0, "server log")])
    b = make_check("tcp_throughput", "a<->c", "passed", nodes=["a", "c"],
                   evidence=[("c", "iperf3 -s", 0, "server log")])
    seen: dict[str, str] = {}
    first, second = page.evidence_html(a, seen), page.evidence_html(b, seen)
    assert "THE END" in first and len(first) < page.OUTPUT_INLINE_CHARS + 3_000
    assert "earlier characters cut here; --evidence-dir keeps the whole output" in first
    assert "server log" in first and "server log" not in second
    assert "the same output as tcp_throughput a&lt;-&gt;b shows" in second
    # What passed shows less of its outputs: its figure is in its row.
    passed = make_check("tcp_throughput", "b<->c", "passed", nodes=["b", "c"], evidence=[("b", "iperf3 -c c", 0, big)])
    assert len(page.evidence_html(passed)) < page.PASSED_INLINE_CHARS + 1_500


def test_checks_the_profile_does_not_set_are_counted_not_listed() -> None:
    unset = [make_check("preflight", f"gpu{i:02d}", "skipped", nodes=[f"gpu{i:02d}"], layer="software",
                        message="profile p does not set software.preflight") for i in range(1, 65)]
    ran = make_check("mtu", "gpu01", "passed", value=9000, expected=9000, nodes=["gpu01"])
    html = page.layer_tables([*unset, ran])
    assert "64 checks the profile does not set were skipped" in html and "gpu07" not in html
    assert "all 1 inter_node checks" in html


def test_an_errors_evidence_is_its_message() -> None:
    html = page.evidence_html(_missing("gpu_count", "gpu01"))
    assert "No command output recorded" not in html
    assert "nvidia-smi: command not found<br>command: nvidia-smi topo -m<br>fix: install" in html


def test_not_run_gives_an_errored_checks_cause() -> None:
    from pytest_fabric.report.run_verdict import judge_run

    errors = [_missing("gpu_count", f"gpu{i:02d}") for i in range(1, 9)]
    html = page.not_run_table(judge_run(errors), errors)
    assert "intra_node.gpu_count" in html and "node gpu[01-08]: nvidia-smi: command not found; fix: install" in html
