"""``--require-accept``: a CI gate's exit status, 0 only for ACCEPT; without it pytest's conventions."""

from __future__ import annotations

import pytest

LOCAL = ("--cluster", "local", "-p", "no:cacheprovider")
MTU_ONLY = "name: mtu-only\ninter_node:\n  mtu: {min: 1500, source: Ethernet minimum}\n"


@pytest.fixture
def mtu_only(pytester: pytest.Pytester) -> str:
    return str(pytester.makefile(".yaml", **{"mtu-only": MTU_ONLY}))


@pytest.mark.parametrize(
    ("profile", "args", "verdict", "plain", "required"),
    [
        pytest.param("mtu-only", ("-k", "mtu"), "ACCEPT", 0, 0, id="accept"),
        pytest.param("localhost", ("-k", "mtu"), "INCOMPLETE", 0, 1, id="incomplete-subset"),
        pytest.param("localhost", ("-k", "test_gpu_ and not gpudirect"), "NO VERDICT", 0, 1, id="no-verdict"),
        pytest.param("localhost", ("-k", "mtu", "--expect", "inter_node.mtu.min=100000"), "REJECT", 1, 1, id="reject"),
    ],
)
def test_exit_status(
    pytester: pytest.Pytester, mtu_only: str, profile: str, args: tuple[str, ...], verdict: str, plain: int, required: int
) -> None:
    profile_ref = mtu_only if profile == "mtu-only" else profile
    without = pytester.runpytest(*LOCAL, "--profile", profile_ref, *args)
    assert f"{verdict}:" in without.stdout.str(), without.stdout.str()
    assert without.ret == plain, without.stdout.str()
    with_gate = pytester.runpytest(*LOCAL, "--profile", profile_ref, "--require-accept", *args)
    assert with_gate.ret == required, with_gate.stdout.str()
    if required and not plain:  # a REJECT already exits 1 by pytest's convention: nothing to say
        with_gate.stdout.fnmatch_lines([f"fabric: --require-accept: exit status 1, the verdict is {verdict}*"])


def test_require_accept_needs_a_cluster(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--require-accept")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--require-accept needs --cluster*"])
