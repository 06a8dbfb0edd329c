"""At scale a check the profile does not set is one skipped test, not one per subject."""

from __future__ import annotations

import pytest


def _collect(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makefile(".yaml", inv="""
name: big
nodes:
  - {name: "gpu[01-06]", labels: {leaf: leaf1}}
  - {name: "gpu[07-12]", labels: {leaf: leaf2}}
storage: {mounts: [{path: /lustre, fstype: lustre}]}
egress: {targets: [https://mirror.example.com/100MB.bin, {url: "https://upload.example.com/drop", upload: true}]}
""")
    result = pytester.runpytest_subprocess("--cluster", "inv.yaml", "--profile", "ndr400-large", "--collect-only",
                                           "-q", "-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    return [line for line in result.stdout.lines if "::" in line]


def test_a_check_the_profile_does_not_set_is_one_test_above_the_limit(pytester: pytest.Pytester) -> None:
    """Fails on collecting it per subject: ndr400-large sets no roce, min_versions or gpudirect_bandwidth,
    16,384 tests at 4,096 nodes that all skipped."""
    small = _collect(pytester)
    assert sum("test_roce[" in line for line in small) == 12  # up to the limit: as before, per node
    large = _collect(pytester, "--fabric-device-tests-up-to", "4")
    assert [line.rsplit("::", 1)[1] for line in large if "test_roce[" in line] == ["test_roce[not-set]"]
    assert [line.rsplit("::", 1)[1] for line in large if "test_min_versions[" in line] == ["test_min_versions[not-set]"]
    assert sum("test_gpudirect_bandwidth[" in line for line in large) == 1
    # checks it sets keep a test per subject; the mount check (judged by the inventory) is not "not set"
    assert sum("test_mtu[" in line for line in large) == 12
    assert "test_mount[not-set]" not in " ".join(large)
