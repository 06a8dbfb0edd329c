"""An outlier's finding reads as a person says it, in the record and in the terminal and HTML rows."""

from __future__ import annotations

from pytest_fabric.judge import consistency
from pytest_fabric.report import page
from pytest_fabric.report.terminal import problem_line
from pytest_fabric.report.testing import make_check

PAIRS = {f"p{i}": 100.0 + (i % 3) * 0.5 for i in range(14)}


def test_the_finding_says_how_far_below_the_median_and_the_limit() -> None:
    finding = consistency.outlier({**PAIRS, "bad": 88.0}, "bad")
    text = consistency.describe(finding, 0.07)
    assert text == "10.2 % below the median of 15 pairs beyond their spread (12.4 % in all, 2.2 % of it noise); limit 7 %"
    latency = consistency.outlier({**PAIRS, "slow": 130.0}, "slow", lower_is_better=True)
    assert " % above the median of 15 pairs" in consistency.describe(latency, None, lower_is_better=True)


def test_rows_say_the_finding_not_a_share_and_a_margin_of_it() -> None:
    c = make_check("tcp_throughput_outlier", "a<->b", "failed", value=94.24, unit="%", expected=7, op="<=",
                   nodes=["a", "b"], extra={"outlier": {"text": "94.2 % below the median of 15 pairs; limit 7 %"}})
    assert problem_line(c) == "FAILED tcp_throughput_outlier a<->b: 94.2 % below the median of 15 pairs; limit 7 %"
    table = page.layer_tables([c])
    assert "94.2 % below the median of 15 pairs; limit 7 %" in table and "+1246" not in table
