"""Nodesets: Slurm/pdsh/clush syntax read as ClusterShell reads it, in written order; fold; errors."""

from __future__ import annotations

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet

from pytest_fabric.config.hostlist import HostlistError, expand, fold, is_expression


def test_zero_padding_follows_the_lower_bound() -> None:
    names = expand("gpu[01-16]")
    assert names == [f"gpu{n:02d}" for n in range(1, 17)]


def test_no_padding_when_the_lower_bound_has_none() -> None:
    assert expand("gpu[9-11]") == ["gpu9", "gpu10", "gpu11"]
    assert expand("gpu[009-011]") == ["gpu009", "gpu010", "gpu011"]


def test_ip_addresses() -> None:
    assert expand("10.0.0.[11-26]") == [f"10.0.0.{n}" for n in range(11, 27)]


def test_lists_and_ranges_mixed() -> None:
    assert expand("node[1,3,5-7]") == ["node1", "node3", "node5", "node6", "node7"]


def test_several_brackets_expand_as_a_product_leftmost_slowest() -> None:
    assert expand("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]


def test_suffix_after_the_bracket() -> None:
    assert expand("gpu[1-2]-ib") == ["gpu1-ib", "gpu2-ib"]


def test_top_level_commas_as_sinfo_prints_them() -> None:
    assert expand("gpu[01-04],cpu[1-2]") == ["gpu01", "gpu02", "gpu03", "gpu04", "cpu1", "cpu2"]
    assert expand("gpu01,gpu02") == ["gpu01", "gpu02"]


def test_steps() -> None:
    assert expand("node[1-16/2]") == [f"node{n}" for n in range(1, 17, 2)]
    assert expand("gpu[01-08/4]") == ["gpu01", "gpu05"]


def test_exclusion_intersection_and_symmetric_difference() -> None:
    assert expand("gpu[01-16]!gpu07") == [f"gpu{n:02d}" for n in range(1, 17) if n != 7]
    assert expand("gpu[01-16]!gpu[03-14]") == ["gpu01", "gpu02", "gpu15", "gpu16"]
    assert expand("node[1-4]&node[3-9]") == ["node3", "node4"]
    assert expand("node[1-4]^node[3-5]") == ["node1", "node2", "node5"]


def test_written_order_is_kept_where_clustershell_sorts() -> None:
    # name and host pair by position, so the order must be the user's, not NodeSet's sorted one.
    assert list(NodeSet("gpu[01-02],cpu1", resolver=RESOLVER_NOGROUP)) == ["cpu1", "gpu01", "gpu02"]
    assert expand("gpu[01-02],cpu1") == ["gpu01", "gpu02", "cpu1"]
    assert expand("gpu[3,1,2]") == ["gpu3", "gpu1", "gpu2"]
    assert expand("10.0.0.[26,11-12]") == ["10.0.0.26", "10.0.0.11", "10.0.0.12"]
    assert expand("r[2,1]n[1-2]") == ["r2n1", "r2n2", "r1n1", "r1n2"]


def test_a_name_written_twice_is_one_node() -> None:
    assert expand("gpu[1-3],gpu2") == ["gpu1", "gpu2", "gpu3"]


def test_spaces_around_commas_are_ignored_as_clush_does() -> None:
    assert expand("gpu[1, 2], cpu1") == ["gpu1", "gpu2", "cpu1"]


@pytest.mark.parametrize(
    "expression",
    [
        "gpu[01-16]",
        "gpu[01-04],cpu[1-2]",
        "node[1-16/2]",
        "node[0-30/7],node[2-4]",
        "gpu[01-16]!gpu07",
        "gpu[01-16]!gpu[02-15/3],gpu20",
        "node[1-8]&node[5-12]^node[7-9]",
        "r[1-2]n[01-08]",
        "r[1-2]n[01-08]!r2n[03-04]",
        "10.0.0.[11-26]",
        "10.0.[0-1].[1-2]",
        "gpu[1,01,001]",
        "gpu[9-11],gpu[009-011]",
        "node-[1-2]-ib[0-1]",
        "gpu[3,1,2],gpu[2-5]",
    ],
)
def test_same_names_as_clustershell(expression: str) -> None:
    theirs = list(NodeSet(expression, resolver=RESOLVER_NOGROUP))
    ours = expand(expression)
    assert sorted(ours) == sorted(theirs)
    assert len(ours) == len(set(ours))


@pytest.mark.parametrize("name", ["head", "gpu01", "10.0.0.5", "login-1.example.com"])
def test_plain_name_expands_to_itself(name: str) -> None:
    assert not is_expression(name)
    assert expand(name) == [name]


@pytest.mark.parametrize(
    ("expression", "match"),
    [
        ("gpu[01-16", "unbalanced"),
        ("gpu01-16]", "unbalanced"),
        ("gpu[1-3]]", "unbalanced"),
        ("gpu[[1-3]", "unbalanced"),
        ("gpu[16-01]", "runs backwards"),
        ("gpu[]", "empty brackets"),
        ("gpu[ ]", "empty brackets"),
        ("gpu[a-c]", "'a-c' is not a number or a range"),
        ("gpu[1-]", "not a number or a range"),
        ("gpu[1-2,]", "an empty item between commas"),
        ("gpu[01-1]", "pads its ends differently"),
        ("gpu[1-1000000]", "more than 100000 hosts"),
        ("gpu[1-100000000]", "more than 100000 hosts"),  # refused before ClusterShell spends minutes on it
        ("gpu[1-60000],cpu[1-60000]", "expands to 120000 hosts"),
        ("r[0-999]n[0-999]", "expands to 1000000 hosts"),
        ("gpu[1-3],", "nothing on one side"),
        ("!gpu1", "nothing on one side"),
        ("gpu[1-3],,gpu4", "nothing on one side"),
        ("gpu[1-4],@rack1", "'@rack1' is a node group; write its nodes out"),
        ("gpu[1-4/0]", "1-4/0"),
    ],
)
def test_bad_expressions(expression: str, match: str) -> None:
    with pytest.raises(HostlistError, match=match) as excinfo:
        expand(expression)
    assert repr(expression) in str(excinfo.value)  # the message quotes what the user wrote


def test_hostlist_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        expand("gpu[")


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        (["gpu17", "gpu03"], "gpu[03,17]"),
        (["gpu03", "gpu04", "gpu05", "gpu17"], "gpu[03-05,17]"),
        (["gpu10", "gpu9"], "gpu[9-10]"),  # numeric order, not string order
        (["gpu01", "gpu100"], "gpu[01,100]"),  # padding as written, per name
        (["gpu1", "gpu01"], "gpu[1,01]"),  # two different nodes
        (["r1n01", "r2n01", "r1n02"], "r1n[01-02],r2n01"),
        (["gpu1", "cpu1", "gpu2"], "cpu1,gpu[1-2]"),
        (["10.0.0.11", "10.0.0.12", "10.0.1.1"], "10.0.0.[11-12],10.0.1.1"),
        (["gpu1-ib", "gpu2-ib"], "gpu[1-2]-ib"),
        (["head"], "head"),
        (["gpu03", "gpu03"], "gpu03"),
        ([], ""),
    ],
)
def test_fold(names: list[str], folded: str) -> None:
    assert fold(names) == folded
    assert fold(iter(names)) == folded  # any iterable


@pytest.mark.parametrize(
    "names",
    [[f"gpu{n:02d}" for n in (1, 2, 3, 7, 9, 10, 11)] + ["r1n1", "r2n1"], [f"10.0.0.{n}" for n in range(1, 17)]],
)
def test_fold_reads_back_in_clustershell_as_the_same_names(names: list[str]) -> None:
    assert set(NodeSet(fold(names), resolver=RESOLVER_NOGROUP)) == set(names)
    assert sorted(expand(fold(names))) == sorted(names)


@pytest.mark.parametrize("name", ["a,b", "gpu[1]", "x!y", "@rack1", "two words", ""])
def test_fold_refuses_names_that_would_not_fold_back(name: str) -> None:
    with pytest.raises(HostlistError, match="not a node name"):
        fold(["gpu01", name])
