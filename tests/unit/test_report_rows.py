"""The results table's rows: cells and evidence written small, long shared texts once, sort keys that sort."""

from __future__ import annotations

import random

from pytest_fabric.report import rows
from pytest_fabric.report.testing import make_check

PROBE = 'd=/sys/class/net/eth0; echo "type $(cat $d/type 2>/dev/null)"; echo "speed $(cat $d/speed)"'


def test_sort_keys_sort_as_the_numbers_do() -> None:
    rng = random.Random(7)
    values = [0.0, 1.0, -1.0, 9.999996, -9.999996, 1e-9, -1e-9, 3e15, -3e15, 0.1, 0.09999996]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 15) for _ in range(2000)]
    keys = [rows.sort_key(v) for v in values]
    assert len({len(k) for k in keys if k != "1"}) == 1  # fixed width: a string comparison orders them
    assert [v for _, v in sorted(zip(keys, values))] == sorted(values)


def test_cells_are_plain_html_with_a_hidden_sort_key() -> None:
    c = make_check("tcp_throughput", "a<->b", "failed", value=120.5, unit="Gb/s", expected=180, nodes=["a", "b"])
    measured, expected, margin, outcome = rows.row_cells(c, with_change=False)
    assert measured == "<td class=col-measured><i>21021.20500</i>120.5 Gb/s</td>"
    assert expected == "<td class=col-expected>>= 180 Gb/s</td>"  # only < and & need escaping in text
    assert margin.startswith("<td class=col-margin><i>0") and margin.endswith("-33.1%</td>")
    assert outcome == "<td class=col-outcome>failed</td>"  # coloured by the row's class, not by markup
    error = make_check("mtu", "a", "error", nodes=["a"])
    assert rows.row_cells(error, with_change=False)[0] == "<td class=col-measured><i>~</i></td>"  # sorts last
    assert rows.compact_cells(['<td class="col-result">Passed</td>', '<td class="col-links"></td>']) == [
        "<td class=col-result>Passed</td>"]


def test_an_error_that_ran_nothing_has_no_evidence_block() -> None:
    error = make_check("link_layer", "gpu01", "error", nodes=["gpu01"],
                       message="node gpu01: ibstat: command not found\ncommand: ibstat\nfix: install infiniband-diags")
    assert rows.evidence_html(error, message_in_log=True) == ""  # its log is its message
    assert "command not found<br>command: ibstat<br>fix: install" in rows.evidence_html(error)


def test_a_pass_shows_how_it_was_measured_not_its_figures_again() -> None:
    c = make_check("dns_resolve", "n1:mirror", "passed", value=4.9, unit="ms", expected=100, op="<=", nodes=["n1"],
                   message="n1:mirror: measured 4.9 ms (-95.1%), meets <= 100 ms; getent ahosts m on n1",
                   evidence=[("n1", "getent ahosts m", 0, "0 4899401\n")])
    c["detail"] = "getent ahosts m on n1"
    html = rows.evidence_html(c, rows.SharedTexts())
    assert "<p>getent ahosts m on n1</p>" in html and "measured 4.9 ms" not in html
    assert "on n1: <code>getent ahosts m</code> exit 0 in 1.25 s" in html and "<pre>0 4899401\n</pre>" in html
    assert "vendor datasheet" not in html  # the source is said once per check, above the tables


def test_outputs_are_cut_to_a_tail_and_shared_outputs_shown_once() -> None:
    big = "x" * 50_000 + "THE END"
    a = make_check("tcp_throughput", "a<->b", "failed", nodes=["a", "b"],
                   evidence=[("a", "iperf3 -c b", 0, big), ("b", "iperf3 -s", 0, "server <log> & more"),
                             ("b", PROBE, 0, "type 1\n"), ("b", PROBE, 0, "type 1\n")])
    b = make_check("tcp_throughput", "b<->c", "passed", nodes=["b", "c"],
                   evidence=[("b", "iperf3 -s", 0, "server <log> & more"), ("b", PROBE, 0, "type 1\n")])
    shared = rows.SharedTexts()
    first, second = rows.evidence_html(a, shared), rows.evidence_html(b, shared)
    assert "THE END" in first and len(first) < rows.CHECK_CHARS + 1_500
    # What the record had cut already counts: the output was 50,007 characters.
    assert f"[{50_007 - rows.OUTPUT_CHARS} earlier characters cut; --evidence-dir keeps the whole output]" in first
    assert "server &lt;log> &amp; more" in first and "server" not in second.replace("iperf3 -s", "")
    # The second check links to one copy of the shared output; a probe's long command line is its start
    # and a link to it whole; the same command run twice with the same output is one clause.
    assert "<a href=#fabric-s2>stdout " in second
    assert f"<code>{rows.text(PROBE[:rows.COMMAND_CHARS])}</code> <a href=#fabric-s1>[whole]</a> (2 times)" in first
    section = shared.section_html()
    assert section.count('<div id="fabric-s') == 3  # the probe's command, the server's log, the probe's output
    assert "server &lt;log> &amp; more" in section and "echo &quot;type" in section  # the whole command


def test_without_a_page_each_row_says_everything_itself() -> None:
    c = make_check("tcp_throughput", "a<->b", "passed", nodes=["a", "b"], evidence=[("b", PROBE, 0, "type 1\n")])
    html = rows.evidence_html(c)
    assert "more characters in the record" in html and "type 1" in html and "href" not in html


def test_corroborations_and_tools_are_shown_escaped() -> None:
    check = {
        "subject": "node01->node02", "outcome": "failed", "message": "uncorroborated on node01", "evidence": [],
        "extra": {
            "corroborations": [
                {"witness": "interface counters", "node": "node01", "status": "uncorroborated",
                 "detail": "node02 eth0 rx_bytes: claims 4e9 B but <grew> 1e9 B"},
                {"witness": "internal", "node": "node01", "status": "agrees", "detail": "iperf3 bytes/seconds"},
            ],
            "tool_identity": {"node01": {"iperf3": {"resolved": "/usr/local/bin/iperf3", "sha256": "ab" * 32,
                                                    "elf": False, "script": "#!/bin/sh", "package": None,
                                                    "package_manager": "dpkg", "build_id": None}}},
            "tool_flags": {"node01": ["iperf3: no dpkg package owns /usr/local/bin/iperf3"]},
        },
    }
    html = rows.evidence_html(check)
    assert "interface counters on node01: UNCORROBORATED" in html and "&lt;grew>" in html
    assert "internal on node01: agrees" in html
    assert "/usr/local/bin/iperf3</td><td>abababababababab</td><td>script #!/bin/sh</td>" in html
    assert "no dpkg owner" in html and "node01: iperf3: no dpkg package owns" in html


def test_a_record_without_corroborations_shows_none_and_an_empty_list_says_so() -> None:
    assert "Corroborations" not in rows.evidence_html({"outcome": "passed", "evidence": [], "detail": "x"})
    said = rows.evidence_html({"outcome": "passed", "evidence": [], "detail": "x", "extra": {"corroborations": []}})
    assert "Corroborations: none ran." in said


def test_a_tenants_tool_says_it_is_the_tenants_copy_and_whether_the_node_kept_it() -> None:
    def check(verified: bool) -> dict[str, object]:
        tool = {"resolved": "/tmp/.pytest-fabric-r.X/iperf3", "sha256": "cd" * 32, "elf": True, "script": None,
                "package": None, "package_manager": "dpkg", "build_id": "beef", "supplied_by": "tenant",
                "pinned_sha256": "cd" * 32, "verified_on_node": verified}
        return {"subject": "a<->b", "outcome": "passed", "evidence": [], "extra": {"tool_identity": {"a": {"iperf3": tool}}}}

    assert "the tenant's copy: sha256 verified on the node" in rows.evidence_html(check(True))
    assert "the tenant's copy: NOT the pinned sha256" in rows.evidence_html(check(False))
