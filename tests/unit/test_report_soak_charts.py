"""report/soak_charts.py: a soak drawn over time as inline SVG (issue 31)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pytest_fabric.report.soak_charts import Line, Mark, line_chart, soak_section

SVG = "{http://www.w3.org/2000/svg}"


def _soak() -> dict[str, object]:
    return {
        "cycles": 4, "elapsed_s": 240.0,
        "figures": [
            {"key": "inter_node.tcp_throughput", "subject": "n1<->n2", "unit": "Gb/s", "higher_is_better": True,
             "limit": 1.0, "points": [[1, 60.0, 10.0, "passed"], [2, 120.0, 10.1, "passed"],
                                       [3, 180.0, 10.0, "passed"], [4, 240.0, 9.9, "passed"]]},
            {"key": "inter_node.tcp_throughput", "subject": "n3<->n4", "unit": "Gb/s", "higher_is_better": True,
             "limit": 1.0, "points": [[1, 60.0, 10.0, "passed"], [2, 120.0, 10.0, "passed"],
                                       [3, 180.0, 2.0, "passed"], [4, 240.0, None, "error"]]},
        ],
        "telemetry": {"series": [
            {"node": "n1", "series": "eth0 state", "kind": "state", "unit": "", "points": [[0, 1, "up"], [30, 1, "up"]]},
            {"node": "n1", "series": "gpu0 temperature", "kind": "level", "unit": "C", "points": [[0, 40, ""], [30, 71, ""]]},
        ], "not_sampled": {"n2": "no nvidia-smi on the node"}},
        "judgement": {"verdict": "reject", "max_drift": 0.1, "faults": [
            {"kind": "drift", "cycle": 3, "at_s": 180.0, "when": "2027-01-15T08:03:00+00:00", "subject": "n3<->n4",
             "nodes": ["n3", "n4"], "what": "inter_node.tcp_throughput",
             "message": "n3<->n4: inter_node.tcp_throughput drifted 80.0% from its best in cycle 3 <b>"}]},
    }


def test_a_chart_is_wellformed_svg_with_the_worst_line_first_and_the_fault_marked() -> None:
    lines = [Line("bad<&>", [(0, 5.0, False), (60, 1.0, True)], fault=True), Line("good", [(0, 5.0, False), (60, 5.0, False)])]
    svg = line_chart("tcp <throughput>", lines, unit="Gb/s", marks=[Mark(60, "drift cycle 2: <x>")], limit=2.0)
    root = ET.fromstring(svg)  # escaped: parses as XML
    assert root.tag == f"{SVG}svg"
    assert len(root.findall(f"{SVG}polyline")) == 2
    assert len(root.findall(f".//{SVG}g[@class='fabric-soak-fault']")) == 1
    assert len(root.findall(f".//{SVG}g[@class='fabric-soak-bad']")) == 1
    legend = [t.text for t in root.findall(f"{SVG}text") if t.text in ("bad<&>", "good")]
    assert legend == ["bad<&>", "good"]


def test_the_section_puts_the_faulty_chart_first_its_faulty_subject_first_and_says_what_was_not_sampled() -> None:
    html = soak_section(_soak())
    assert "Over time: 4 cycles" in html
    assert "drifted 80.0% from its best in cycle 3 &lt;b&gt;" in html and "<b>\n" not in html
    assert "telemetry not sampled on n2: no nvidia-smi on the node" in html
    first_chart = html.index("inter_node.tcp_throughput: higher is better")
    assert first_chart < html.index("gpu0 temperature (level)") < html.index("steady throughout")
    assert "steady throughout (the same reading in every sample): eth0 state (state) on n1" in html
    assert "<title>eth0 state" not in html  # a flat series is said, not drawn
    chart = html[html.index("<svg", first_chart - 400): html.index("</svg>", first_chart)]
    root = ET.fromstring(chart + "</svg>")
    legend = [t.text for t in root.findall(f"{SVG}text") if t.text in ("n1<->n2", "n3<->n4")]
    assert legend == ["n3<->n4", "n1<->n2"]
    assert "cycle 3" in chart and "fabric-soak-fault" in chart


def test_charts_of_a_healthy_soak_have_no_fault_mark() -> None:
    soak = _soak()
    soak["judgement"] = {"verdict": "accept", "max_drift": None, "faults": []}
    html = soak_section(soak)
    assert "fabric-soak-fault" not in html and "drift not judged" in html
