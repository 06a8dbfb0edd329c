"""``--fabric-values`` (or ``-rA``): what the passing checks measured, in the terminal summary."""

from __future__ import annotations

import pytest

from pytest_fabric.report.terminal import value_lines
from pytest_fabric.report.testing import make_check, sample_cluster, write_fake_project

REPORT_PLUGINS = ["evidence", "compare", "collect", "record_json", "terminal", "html", "junit"]
PLUGIN_ARGS = [arg for m in REPORT_PLUGINS for arg in ("-p", f"pytest_fabric.report.{m}")]


def test_value_lines_put_the_closest_margin_first() -> None:
    checks = [make_check("tcp_throughput", s, "passed", value=v, unit="Gb/s", expected=180, nodes=s.split("<->"))
              for s, v in (("a<->b", 191.2), ("a<->c", 183.6), ("b<->c", 240.0))]
    checks.append(make_check("tcp_throughput", "c<->d", "failed", value=120, unit="Gb/s", expected=180))
    assert value_lines(checks) == [
        "measured values of passing checks (closest to the limit first):",
        "  inter_node.tcp_throughput: 3 passed; closest a<->c 183.6 Gb/s, expected >= 180 Gb/s (+2.0%)",
        "    a<->c: 183.6 Gb/s (+2.0%)",
        "    a<->b: 191.2 Gb/s (+6.2%)",
        "    b<->c: 240 Gb/s (+33.3%)",
    ]


@pytest.mark.parametrize("flag", ["--fabric-values", "-rA"])
def test_the_terminal_shows_passing_values_when_asked(pytester: pytest.Pytester, flag: str) -> None:
    info, checks = sample_cluster(4, slow="node03", down=None)
    write_fake_project(pytester.path, info, checks)
    quiet = pytester.runpytest(*PLUGIN_ARGS)
    assert "measured values of passing checks" not in quiet.stdout.str()
    result = pytester.runpytest(*PLUGIN_ARGS, flag)
    result.stdout.fnmatch_lines([
        "measured values of passing checks (closest to the limit first):",
        "  intra_node.nvlink_bandwidth: 4 passed; closest node01 232 GB/s, expected >= 230 GB/s (+0.9%)",
        "  inter_node.tcp_throughput: 3 passed; closest node01<->node02 191.2 Gb/s, expected >= 180 Gb/s (+6.2%)",
    ], consecutive=False)
