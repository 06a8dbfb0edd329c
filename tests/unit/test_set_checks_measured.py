"""A check the profile sets that measured nothing is no pass (issue: verdicts a tenant signs without argument).

Reproduced first as ``ACCEPT: 0 failed, 0 errored`` for a profile extending ``localhost`` that also
sets ``intra_node.gpu_health`` (dcgmi is not installed here), ``inter_node.oversubscription`` (no
``leaf`` labels) and ``egress.download`` (no URL among the targets).
"""

from __future__ import annotations

import json
import shutil

import pytest


def _profile(pytester: pytest.Pytester, body: str) -> str:
    path = pytester.path / "holes.yaml"
    path.write_text("name: holes\nextends: localhost\n" + body)
    return str(path)


def test_what_the_inventory_lacks_is_a_usage_error_at_load_naming_the_key_to_add(pytester: pytest.Pytester) -> None:
    profile = _profile(pytester, "inter_node:\n  oversubscription: {min: 90%}\negress:\n  download: {min: 100 Mb/s}\n")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", profile, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert "inter_node.oversubscription" in err and "labels: {leaf: leaf1}" in err, err
    assert "egress.download" in err and "egress.targets" in err, err
    assert "optional: true" in err


def test_optional_checks_are_not_refused_and_do_not_block_accept(pytester: pytest.Pytester) -> None:
    profile = _profile(pytester, "inter_node:\n  oversubscription: {min: 90%, optional: true}\n")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", profile, "-k", "mtu or oversubscription",
                                           "--conformance-json", "record.json")
    out = result.stdout.str()
    assert "marked optional: true, or it cannot exist on this inventory): inter_node.oversubscription" in out, out[-3000:]
    record = json.loads((pytester.path / "record.json").read_text())
    assert record["run"]["not_run"].get("optional") == {"inter_node.oversubscription": 1}, record["run"]


@pytest.mark.skipif(shutil.which("dcgmi") is not None, reason="dcgmi is installed here: the fault cannot be shown")
def test_a_missing_tool_is_an_error_of_the_node_and_the_run_is_not_accepted(pytester: pytest.Pytester) -> None:
    profile = _profile(pytester, "intra_node:\n  gpu_health: {level: 1}\n")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", profile, "-k", "mtu or gpu_health",
                                           "--conformance-json", "record.json")
    out = result.stdout.str()
    assert "ACCEPT" not in out and "INCOMPLETE" in out, out[-3000:]
    record = json.loads((pytester.path / "record.json").read_text())
    (health,) = [c for c in record["checks"] if c["check"] == "gpu_health"]
    assert health["outcome"] == "error" and "dcgmi" in health["message"], health


def test_a_check_that_cannot_exist_on_this_inventory_is_said_at_load_and_does_not_block(
    pytester: pytest.Pytester,
) -> None:
    # One node, one pair: a median of pairs cannot exist. Said in the header, listed as not run.
    profile = _profile(pytester, "inter_node:\n  outlier: {max_below_median: 10%}\n")
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", profile,
                                           "--conformance-json", "record.json")
    out = result.stdout.str()
    assert "fabric: inter_node.outlier cannot exist on this inventory (a median needs at least 3 pairs" in out, out
    record = json.loads((pytester.path / "record.json").read_text())
    assert record["run"]["verdict"] == "accept", record["run"]
    # rdma_bandwidth_outlier reads rdma_bandwidth, which localhost does not set: not a check of this run
    assert record["run"]["not_run"].get("optional") == {"inter_node.tcp_throughput_outlier": 1}, record["run"]
