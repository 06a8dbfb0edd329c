"""Every bad input of issue 2 ends in pytest's usage error: no traceback, file, line and field named."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

LOCAL_INVENTORY = "nodes: [{name: local, host: localhost}]\nstorage: {mounts: [/tmp]}\negress: {targets: [localhost]}\n"


def _write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _usage_error(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest(*args)
    output = result.stdout.str() + "\n" + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert "Traceback" not in output, output
    assert "INTERNALERROR" not in output, output
    return output


INVENTORY_ERRORS = [
    pytest.param(
        "name: t\nnodes:\n  - name: a\n    hots: x\n",
        ":4: nodes[0].hots: unknown key (did you mean 'host'?)",
        id="unknown-key",
    ),
    pytest.param("nodes:\n  - name: a\n  - name: a\n", ":3: nodes[1]: node 'a' is listed twice", id="duplicate-node"),
    pytest.param(
        "nodes:\n  - name: gpu[01-04]\n  - name: gpu[04-05]\n",
        ":3: nodes[1]: node 'gpu04' is listed twice (first on line 2)",
        id="duplicate-from-hostlists",
    ),
    pytest.param(
        "nodes:\n  - name: gpu[01-04]\n    host: 10.0.0.[1-3]\n",
        ":2: nodes[0]: name 'gpu[01-04]' expands to 4 nodes but host '10.0.0.[1-3]' to 3",
        id="expansion-mismatch",
    ),
    pytest.param(
        "nodes:\n  - name: node1\n    host: 'node1; rm -rf /'\n",
        ":2: nodes[0].host: 'node1; rm -rf /' is not a hostname or IP address",
        id="shell-metacharacter",
    ),
    pytest.param(
        "nodes:\n  - name: node1\n    data_address: 'x; rm -rf /'\n",
        ":2: nodes[0].data_address: 'x; rm -rf /' is not a hostname or IP address",
        id="data-address-shell-metacharacter",
    ),
    pytest.param(
        "nodes:\n  - name: gpu[01-16]\n    data_address: 192.168.0.1\n",
        ":2: nodes[0].data_address: one address '192.168.0.1' for the 16 nodes of 'gpu[01-16]'",
        id="data-address-one-for-many",
    ),
    pytest.param(
        "nodes:\n  - name: gpu[16-01]\n", ":2: nodes[0].name: 'gpu[16-01]': range '16-01' runs backwards; write it 01-16", id="hostlist"
    ),
    pytest.param(
        "nodes: [{name: a}]\nstorage:\n  mounts:\n    - mnt/lustre\n",
        ":4: storage.mounts[0]: 'mnt/lustre': a mount must be an absolute path",
        id="relative-mount",
    ),
    pytest.param(
        "nodes: [{name: a}]\negress:\n  targets:\n    - 'https://mirror.example.com/a b'\n",
        ":4: egress.targets[0]: 'https://mirror.example.com/a b': contains characters",
        id="egress-space",
    ),
    pytest.param("nodes:\n  - name: [a\n", ":3: not valid YAML", id="invalid-yaml"),
    pytest.param("nodes:\n  - name: a\n    host: x\n    host: y\n", ":4: not valid YAML: duplicate key 'host'", id="duplicate-yaml-key"),
    pytest.param("name: x\nnodes: []\n", ":2: nodes: list at least one node", id="empty-nodes"),
    pytest.param("nodes:\n  - gpu01\n", ":2: nodes[0]: write a mapping", id="node-not-a-mapping"),
    pytest.param("nodes: [{name: a}]\n? [a, b]\n: 1\n", ":2: not valid YAML: a key must be a plain word", id="list-as-key"),
    pytest.param("a: &x [*x]\n", ": not valid here: an alias (*name) refers to", id="recursive-alias"),
]


@pytest.mark.parametrize(("text", "expected"), INVENTORY_ERRORS)
def test_bad_inventory(pytester: pytest.Pytester, text: str, expected: str) -> None:
    inventory = _write(pytester, "inv.yaml", text)
    output = _usage_error(pytester, "--cluster", str(inventory), "--profile", "localhost")
    assert f"{inventory}{expected}" in output


def test_missing_inventory(pytester: pytest.Pytester) -> None:
    output = _usage_error(pytester, "--cluster", "nope.yaml", "--profile", "localhost")
    assert f"--cluster nope.yaml: no such file ({pytester.path / 'nope.yaml'})" in output


def test_missing_profile_file_names_the_option(pytester: pytest.Pytester) -> None:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    output = _usage_error(pytester, "--cluster", str(inventory), "--profile", "nope.yaml")
    assert f"--profile nope.yaml: no such file ({pytester.path / 'nope.yaml'})" in output


def test_unreadable_inventory(pytester: pytest.Pytester) -> None:
    (pytester.path / "adir").mkdir()
    output = _usage_error(pytester, "--cluster", "adir", "--profile", "localhost")
    assert "adir: cannot read" in output


PROFILE_ERRORS = [
    pytest.param(
        "name: t\ninter_node:\n  tcp_througput: {min: 10 Gb/s}\n",
        ":3: inter_node.tcp_througput: unknown key (did you mean 'tcp_throughput'?)",
        id="typo",
    ),
    pytest.param(
        "name: t\ninter_node:\n  tcp_throughput:\n    min: 200 Gb\n",
        ":4: inter_node.tcp_throughput.min: '200 Gb': unknown unit 'Gb'",
        id="bits-not-a-rate",
    ),
    pytest.param(
        "name: t\ninter_node:\n  rdma_latency: {max: 5 Gb/s}\n",
        ":3: inter_node.rdma_latency.max: '5 Gb/s' is a bandwidth; expected a time",
        id="wrong-dimension",
    ),
    pytest.param(
        "name: t\ninter_node:\n  tcp_throughput: {min: 5 furlongs}\n",
        ":3: inter_node.tcp_throughput.min: '5 furlongs': unknown unit 'furlongs'",
        id="unknown-unit",
    ),
    pytest.param("name: t\ninter_node:\n  pairs: everything\n", ":3: inter_node.pairs: pairs: 'everything' is not a strategy", id="pairs"),
    pytest.param("name: t\nextends: hdr2000\n", ":2: extends: no profile named 'hdr2000' (did you mean 'hdr200'?)", id="extends-unknown"),
    pytest.param("name: t\nextends: t.yaml\n", ": `extends` makes a cycle", id="extends-cycle"),
    pytest.param("name: t\ninter_node:\n  mtu: 4096\n  mtu: 9000\n", ":4: not valid YAML: duplicate key 'mtu'", id="duplicate-yaml-key"),
]


@pytest.mark.parametrize(("text", "expected"), PROFILE_ERRORS)
def test_bad_profile(pytester: pytest.Pytester, text: str, expected: str) -> None:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    profile = _write(pytester, "t.yaml", text)
    output = _usage_error(pytester, "--cluster", str(inventory), "--profile", str(profile))
    assert f"{profile}{expected}" in output


def test_unknown_profile_name(pytester: pytest.Pytester) -> None:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    output = _usage_error(pytester, "--cluster", str(inventory), "--profile", "hdr2000")
    assert "no profile named 'hdr2000' (did you mean 'hdr200'?)" in output
    assert "base, hdr200-8rail, hdr200, localhost, ndr400-burn-in, ndr400-large, roce-small" in output


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("inter_node.rdma_bandwidth.min=150Gb", "--expect: inter_node.rdma_bandwidth.min: '150Gb': unknown unit 'Gb'"),
        ("inter_node.rdma_latency.max=5 Gb/s", "--expect: inter_node.rdma_latency.max: '5 Gb/s' is a bandwidth"),
        ("inter_node.mtuu=9000", "--expect 'inter_node.mtuu=9000': inter_node has no check 'mtuu' (did you mean 'mtu'?)"),
        ("inter_nod.mtu=9000", "--expect 'inter_nod.mtu=9000': the key starts with a layer"),
        ("mtu", "--expect 'mtu': write KEY=VALUE"),
        ("inter_node.tcp_throughput.min=[1", "'[1' is not a value"),
    ],
)
def test_bad_expect(pytester: pytest.Pytester, override: str, expected: str) -> None:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    output = _usage_error(pytester, "--cluster", str(inventory), "--profile", "hdr200", "--expect", override)
    assert expected in output


def test_cluster_without_profile(pytester: pytest.Pytester) -> None:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    output = _usage_error(pytester, "--cluster", str(inventory))
    assert "--cluster needs --profile NAME" in output and "hdr200" in output


def test_profile_without_cluster(pytester: pytest.Pytester) -> None:
    output = _usage_error(pytester, "--profile", "hdr200")
    assert "--profile needs --cluster INVENTORY" in output


# --- valid input: collection without connecting anywhere ----------------------------------


def _collect(pytester: pytest.Pytester, *args: str) -> list[str]:
    inventory = _write(pytester, "inv.yaml", LOCAL_INVENTORY)
    result = pytester.runpytest("--cluster", str(inventory), "--collect-only", "-q", *args)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    assert "Traceback" not in output
    return [line for line in result.stdout.lines if "::" in line]  # path::test_name[subject]


def _names(lines: list[str]) -> list[str]:
    return [line.split("::", 1)[1] for line in lines]


def test_collect_only_lists_the_conformance_tests(pytester: pytest.Pytester) -> None:
    tests = _names(_collect(pytester, "--profile", "localhost"))
    for name in ("test_mtu[local]", "test_tcp_throughput[local<->local]", "test_sequential_read[local:/tmp]",
                 "test_sequential_write[local:/tmp]"):
        assert name in tests, tests


def test_fabric_profile_is_an_alias(pytester: pytest.Pytester) -> None:
    tests = _names(_collect(pytester, "--fabric-profile", "localhost", "-k", "tcp_throughput"))
    assert "test_tcp_throughput[local<->local]" in tests


def test_select_a_layer_with_a_marker(pytester: pytest.Pytester) -> None:
    storage = _collect(pytester, "--profile", "localhost", "-m", "storage")
    assert "conformance/storage/test_sequential.py::test_sequential_read[local:/tmp]" in storage
    assert all(line.startswith("conformance/storage/") for line in storage), storage


def test_select_a_check_with_k(pytester: pytest.Pytester) -> None:
    assert _names(_collect(pytester, "--profile", "localhost", "-k", "mtu")) == ["test_mtu[local]"]
