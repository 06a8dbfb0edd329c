"""judge/tool_identity.py: one file per tool across the cluster, and what looks wrong on a node."""

from __future__ import annotations

from pytest_fabric.judge.tool_identity import flags, hash_differences
from pytest_fabric.parsers.tool_identity import NodeToolIdentity, ToolIdentity

REAL = "e8aa8bc4dc8837e0aa93845f2c805cc2af7365a50ac18a26b88f1ca85307e909"
WRAPPER = "5e1c0a7b9d2f4e6a8c0b1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c"


def _iperf3(sha: str, path: str = "/usr/bin/iperf3", *, elf: bool = True, package: str | None = "iperf3") -> ToolIdentity:
    return ToolIdentity("iperf3", path, path, sha, "7f454c46" if elf else "23212f62",
                        None if elf else "#!/bin/sh", None, "dpkg", package)


def _node(tool: ToolIdentity, preload: str | None = None) -> NodeToolIdentity:
    return NodeToolIdentity({tool.name: tool}, preload)


def test_same_hash_everywhere_is_no_finding() -> None:
    assert hash_differences({f"node{i:02d}": _node(_iperf3(REAL)) for i in range(1, 9)}) == []


def test_one_node_with_another_file_is_named() -> None:
    nodes = {f"node{i:02d}": _node(_iperf3(REAL)) for i in range(1, 9)}
    nodes["node03"] = _node(_iperf3(WRAPPER, "/usr/local/bin/iperf3", elf=False, package=None))
    found = hash_differences(nodes)
    assert len(found) == 1
    assert found[0].startswith("node03: iperf3 sha256 5e1c0a7b9d2f4e6a... (/usr/local/bin/iperf3); 7 others e8aa8bc4")


def test_missing_tool_is_not_a_hash_difference() -> None:
    missing = ToolIdentity("iperf3", None, None, None, None, None, None, None, None)
    assert hash_differences({"a": _node(_iperf3(REAL)), "b": _node(missing)}) == []


def test_flags_a_wrapper_script_no_package_and_preload() -> None:
    found = flags(_node(_iperf3(WRAPPER, "/usr/local/bin/iperf3", elf=False, package=None), preload="/tmp/x.so"))
    assert found == [
        "iperf3: /usr/local/bin/iperf3 is a script (#!/bin/sh) where a compiled program is expected",
        "iperf3: no dpkg package owns /usr/local/bin/iperf3",
        "LD_PRELOAD=/tmp/x.so in the session the tools run in",
    ]


def test_a_clean_packaged_elf_has_no_flag() -> None:
    assert flags(_node(_iperf3(REAL))) == []
