"""A check's expected value is recorded in one unit whatever its outcome: the one the profile's author wrote."""

from __future__ import annotations

import json

import pytest

INVENTORY = """\
name: two-mounts
nodes:
  - {name: local, host: localhost}
storage:
  mounts:
    - {path: /, shared: false}
    - {path: /nonexistent-pytest-fabric, shared: false}
"""
PROFILE = """\
name: units
storage:
  sequential_write: {min: 5000 KB/s, size: 4 MiB, direct: false, ioengine: psync, source: a test floor}
"""


def test_errored_and_passed_record_the_same_expected(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", inv=INVENTORY, prof=PROFILE)
    record = pytester.path / "record.json"
    result = pytester.runpytest("--cluster", "inv.yaml", "--profile", "prof.yaml", "-p", "no:cacheprovider",
                                "-k", "sequential_write", f"--conformance-json={record}")
    result.assert_outcomes(passed=1, errors=1)
    expected = {c["outcome"]: c["expected"] for c in json.loads(record.read_text())["checks"]}
    # Before: the passed check said 5000 KB/s and the errored one 40 Mb/s.
    assert expected["passed"] == expected["error"], expected
    assert (expected["error"]["value"], expected["error"]["unit"]) == (5000, "KB/s")
