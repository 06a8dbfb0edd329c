"""HTML fragments of the report page: errors with their reason, grouped by cause, every subject of a cause listed."""

from __future__ import annotations

import re

from pytest_fabric.report import page
from pytest_fabric.report.causes import cause_key
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


def test_checks_the_profile_does_not_set_are_counted_not_listed() -> None:
    unset = [make_check("preflight", f"gpu{i:02d}", "skipped", nodes=[f"gpu{i:02d}"], layer="software",
                        message="profile p does not set software.preflight") for i in range(1, 65)]
    ran = make_check("mtu", "gpu01", "passed", value=9000, expected=9000, nodes=["gpu01"])
    html = page.layer_tables([*unset, ran])
    assert "64 checks the profile does not set were skipped" in html and "gpu07" not in html
    assert "all 1 inter_node checks" in html


def test_not_run_gives_an_errored_checks_cause() -> None:
    from pytest_fabric.report.run_verdict import judge_run

    errors = [_missing("gpu_count", f"gpu{i:02d}") for i in range(1, 9)]
    html = page.not_run_table(judge_run(errors), errors)
    assert "intra_node.gpu_count" in html and "node gpu[01-08]: nvidia-smi: command not found; fix: install" in html


def test_a_cause_lists_every_subject_it_errored_under_its_anchor() -> None:
    errors = [_missing(check, f"gpu{i:02d}") for check in ("gpu_interconnect", "gpu_count") for i in range(1, 9)]
    html = page.layer_tables(errors, [f"gpu{i:02d}" for i in range(1, 9)])
    anchor = page.cause_anchor("intra_node", cause_key(errors[0], {f"gpu{i:02d}" for i in range(1, 9)}))
    row = html.split(f'<tr class="fabric-cause" id="{anchor}">')[1].split("</tr>")[0]
    assert "<summary>on gpu[01-08] (16 checks)</summary>gpu_count: gpu[01-08]<br>gpu_interconnect: gpu[01-08]" in row


def test_each_expected_value_is_said_once_with_its_source() -> None:
    checks = [make_check("mtu", f"gpu{i:02d}", "passed", value=9000, expected=9000, nodes=[f"gpu{i:02d}"])
              for i in range(1, 65)]
    html = page.expectations_table(checks)
    assert html.count("vendor datasheet") == 1 and "<code>inter_node.mtu.min</code>: 9000" in html
    assert html.endswith('<td class="num">64</td></tr></table></details>')


def test_the_send_back_line_lists_attributions_other_classes_apart_escaped() -> None:
    found = {"links": [{"series": "tcp_throughput", "nodes": ["n1", "n4"], "message": "0.4 against 3.7 <b>"}],
             "fabric": ["rdma_bandwidth mlx5_0: the median is under the floor"],
             "cannot_tell": [{"node": "n7", "message": "short", "tell": "measure n7 with 3 more peers"}]}
    checks = [make_check("fabric_attribution", "cluster", "failed", nodes=[], extra={"fabric_attribution": found}),
              make_check("attribution", "n1", "failed", nodes=["n1"],
                         extra={"attribution": {"node": "n1", "verdict": "link fault"}})]
    html = page.send_back_line(checks)
    assert "nodes to send back: none" in html
    assert 'class="fabric-blame-links"' in html and "n1&lt;-&gt;n4 (tcp_throughput): 0.4 against 3.7 &lt;b&gt;" in html
    assert "under the floor" in html and "n7: short; measure n7 with 3 more peers" in html
