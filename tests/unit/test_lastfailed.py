"""``--lf`` with a cluster: what it leaves out is deselected, counted per subject, not "not collected"."""

from __future__ import annotations

import json

import pytest

LOCAL = ("--cluster", "local", "--profile", "localhost", "--expect", "inter_node.mtu.min=100000")


def test_lf_counts_what_it_left_out_as_deselected(pytester: pytest.Pytester) -> None:
    first = pytester.runpytest(*LOCAL, "-k", "mtu or dns_resolve")
    assert first.ret == pytest.ExitCode.TESTS_FAILED, first.stdout.str()
    record = pytester.path / "record.json"
    again = pytester.runpytest(*LOCAL, "--lf", f"--conformance-json={record}")
    out = again.stdout.str()
    assert again.ret == pytest.ExitCode.TESTS_FAILED, out
    again.assert_outcomes(failed=1)
    # Before: the files --lf skipped read "set by the profile, but no test of it was collected (test
    # paths or files left it out)", and the verdict line had no "not run" count.
    assert "no test of it was collected" not in out, out
    again.stdout.fnmatch_lines([
        "not run (the verdict counts none of these):",
        "  deselected (-k, -m, --lf, --deselect): *egress.dns_resolve (1)*",
        "REJECT: 1 failed, 0 errored, 4 not run (1 checks on 1 nodes)",
    ])
    not_run = json.loads(record.read_text())["run"]["not_run"]
    assert set(not_run) == {"deselected"}, not_run
    assert not_run["deselected"] == {"egress.dns_resolve": 1, "inter_node.tcp_throughput": 1,
                                     "storage.sequential_read": 1, "storage.sequential_write": 1}
