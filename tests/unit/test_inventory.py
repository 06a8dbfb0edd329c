"""The inventory: resolution of nodes, and errors that name file, line and field."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import Inventory, load_inventory
from pytest_fabric.config.yamlsource import SourceError


def _write(tmp_path: Path, text: str, name: str = "inv.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _load(tmp_path: Path, text: str) -> Inventory:
    return load_inventory(_write(tmp_path, text))


def _error(tmp_path: Path, text: str) -> str:
    path = _write(tmp_path, text)
    with pytest.raises(SourceError) as excinfo:
        load_inventory(path)
    message = str(excinfo.value)
    assert message.startswith(str(path)), message  # always names the file
    return message.removeprefix(str(path))


DESIGN_EXAMPLE = """
name: bj-a100-pod1
defaults:
  user: root
  port: 22
  identity_file: ~/.ssh/id_ed25519
  connect_timeout: 10
  known_hosts: ~/.ssh/known_hosts
nodes:
  - name: gpu[01-16]
    host: 10.0.0.[11-26]
    labels: {leaf: leaf1}
  - name: head
    host: localhost
storage:
  mounts: [/mnt/lustre, /scratch]
egress:
  targets: [https://mirror.example.com/100MB.bin]
"""


def test_design_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The key it names must exist: ~ is a home of the test's own.
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "id_ed25519").write_text("key")
    inventory = _load(tmp_path, DESIGN_EXAMPLE)
    assert inventory.name == "bj-a100-pod1"
    assert inventory.node_names == [f"gpu{n:02d}" for n in range(1, 17)] + ["head"]
    first = inventory.node("gpu01")
    assert (first.host, first.user, first.port, first.connect_timeout) == ("10.0.0.11", "root", 22, 10.0)
    assert first.identity_file == "~/.ssh/id_ed25519" and first.known_hosts == "~/.ssh/known_hosts"
    assert first.transport == "ssh"
    assert first.labels == {"leaf": "leaf1"}
    assert inventory.node("gpu16").host == "10.0.0.26"
    head = inventory.node("head")
    assert head.transport == "local" and head.labels == {}
    assert inventory.mounts == ("/mnt/lustre", "/scratch")
    assert inventory.egress_targets == ("https://mirror.example.com/100MB.bin",)
    assert inventory.path == tmp_path / "inv.yaml"
    with pytest.raises(KeyError):
        inventory.node("gpu17")


def test_node_overrides_defaults(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        defaults: {user: root, port: 22, connect_timeout: 5}
        nodes:
          - name: a
          - name: b
            user: admin
            port: 2222
            jump: bastion.example.com
            data_address: 192.168.1.2
        """,
    )
    a, b = inventory.nodes
    assert (a.user, a.port, a.connect_timeout, a.jump, a.address) == ("root", 22, 5.0, None, "a")
    assert (b.user, b.port, b.connect_timeout, b.jump) == ("admin", 2222, 5.0, "bastion.example.com")
    assert b.address == "192.168.1.2" and b.host == "b"


def test_builtin_defaults(tmp_path: Path) -> None:
    inventory = _load(tmp_path, "nodes: [{name: a}]\n")
    node = inventory.nodes[0]
    assert inventory.name == "cluster"
    assert (node.host, node.port, node.user, node.connect_timeout, node.transport) == ("a", None, None, 10.0, "ssh")
    assert inventory.mounts == () and inventory.egress_targets == ()


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1"])
def test_localhost_runs_locally(tmp_path: Path, host: str) -> None:
    inventory = _load(tmp_path, f"nodes: [{{name: local, host: '{host}'}}]\n")
    assert inventory.nodes[0].transport == "local"


def test_explicit_transport_wins(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        defaults: {transport: local}
        nodes:
          - name: a
          - name: b
            host: localhost
            transport: ssh
        """,
    )
    assert [n.transport for n in inventory.nodes] == ["local", "ssh"]


def test_nodesets_as_sinfo_prints_them_expand_in_step(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        nodes:
          - name: gpu[01-04],cpu[1-2]
            host: 10.0.0.[11-16]
          - name: node[1-8/2]
            host: 10.0.1.[1-4]
          - name: big[01-04]!big03
            host: 10.0.2.[1-3]
        """,
    )
    # The order written, not ClusterShell's sorted one (which puts cpu1 first): gpu01 is .11.
    assert [(n.name, n.host) for n in inventory.nodes] == [
        ("gpu01", "10.0.0.11"), ("gpu02", "10.0.0.12"), ("gpu03", "10.0.0.13"), ("gpu04", "10.0.0.14"),
        ("cpu1", "10.0.0.15"), ("cpu2", "10.0.0.16"),
        ("node1", "10.0.1.1"), ("node3", "10.0.1.2"), ("node5", "10.0.1.3"), ("node7", "10.0.1.4"),
        ("big01", "10.0.2.1"), ("big02", "10.0.2.2"), ("big04", "10.0.2.3"),
    ]


def test_bracket_items_pair_in_the_order_written(tmp_path: Path) -> None:
    # NodeSet sorts both sides (gpu1 would get .10); the user paired gpu3 with .10.
    inventory = _load(tmp_path, "nodes: [{name: 'gpu[3,1]', host: '10.0.0.[10,30]'}]\n")
    assert [(n.name, n.host) for n in inventory.nodes] == [("gpu3", "10.0.0.10"), ("gpu1", "10.0.0.30")]


def test_data_address_expands_in_step_with_name(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        nodes:
          - name: gpu[01-16]
            host: 10.0.0.[11-26]
            data_address: 192.168.0.[1-16]
          - name: gpu[17-18],cpu1
            data_address: gpu[17-18]-ib,cpu1-ib
          - name: head
            data_address: 192.168.0.100
        """,
    )
    nodes = {n.name: n for n in inventory.nodes}
    assert [nodes[f"gpu{i:02d}"].address for i in range(1, 17)] == [f"192.168.0.{i}" for i in range(1, 17)]
    assert (nodes["gpu01"].host, nodes["gpu16"].host) == ("10.0.0.11", "10.0.0.26")
    assert [nodes[n].address for n in ("gpu17", "gpu18", "cpu1")] == ["gpu17-ib", "gpu18-ib", "cpu1-ib"]
    assert nodes["head"].address == "192.168.0.100"


def test_one_data_address_for_many_nodes_is_an_error(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[01-16]\n    data_address: 192.168.0.1\n")
    assert message == (
        ":2: nodes[0].data_address: one address '192.168.0.1' for the 16 nodes of 'gpu[01-16]'; "
        "each node needs its own, so write a nodeset that expands in step with name, e.g. 192.168.0.[1-16]"
    )
    message = _error(tmp_path, "nodes:\n  - name: gpu[01-16]\n    data_address: storage-vip\n")
    assert message.endswith("e.g. 192.168.0.[1-16]"), message


def test_data_address_and_name_expand_to_different_counts(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[01-04]\n    data_address: 192.168.0.[1-3]\n")
    assert message == (
        ":2: nodes[0]: name 'gpu[01-04]' expands to 4 nodes but data_address '192.168.0.[1-3]' to 3; "
        "they expand in step, so give both the same count"
    )


@pytest.mark.parametrize("address", ["x; rm -rf /", "$(reboot)", "`id`", "a b", "-oProxyCommand=x"])
def test_data_address_with_shell_metacharacters(tmp_path: Path, address: str) -> None:
    message = _error(tmp_path, f"nodes:\n  - name: a\n  - name: b\n    data_address: '{address}'\n")
    assert message == f":3: nodes[1].data_address: {address!r} is not a hostname or IP address"


def test_each_expanded_data_address_is_checked(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[1-2]\n    data_address: '192.168.0.[1-2];id'\n")
    assert message == ":2: nodes[0].data_address: '192.168.0.1;id' is not a hostname or IP address"


def test_bad_data_address_nodeset(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[01-02]\n    data_address: 192.168.0.[2-1]\n")
    assert message == ":2: nodes[0].data_address: '192.168.0.[2-1]': range '2-1' runs backwards; write it 1-2"


def test_name_expands_alone_when_host_is_absent(tmp_path: Path) -> None:
    inventory = _load(tmp_path, "nodes: [{name: 'r[1-2]n[01-02]', labels: {rack: r1}}]\n")
    assert [(n.name, n.host) for n in inventory.nodes] == [
        ("r1n01", "r1n01"), ("r1n02", "r1n02"), ("r2n01", "r2n01"), ("r2n02", "r2n02"),
    ]
    assert all(n.labels == {"rack": "r1"} for n in inventory.nodes)


def test_labels_are_strings(tmp_path: Path) -> None:
    inventory = _load(tmp_path, "nodes: [{name: a, labels: {leaf: 3, rail: r0}}]\n")
    assert inventory.nodes[0].labels == {"leaf": "3", "rail": "r0"}


def test_egress_host_port_target(tmp_path: Path) -> None:
    inventory = _load(tmp_path, "nodes: [{name: a}]\negress: {targets: ['mirror.example.com:443', 'http://10.1.1.1/x']}\n")
    assert inventory.egress_targets == ("mirror.example.com:443", "http://10.1.1.1/x")


# --- errors: file, line, field ---------------------------------------------------


def test_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        name: t
        defaults:
          user: root
          prot: 22
        nodes:
          - name: gpu[01-02]
            hots: x
        """,
    )
    assert ":4: defaults.prot: unknown key (did you mean 'port'?)" in message
    assert ":7: nodes[0].hots: unknown key (did you mean 'host'?)" in message


def test_unknown_top_level_key(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes: [{name: a}]\nstorge: {mounts: [/x]}\n")
    assert message == ":2: storge: unknown key (did you mean 'storage'?)"


def test_duplicate_node_names(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes:
          - name: a
          - name: b
          - name: a
        """,
    )
    assert message == ":4: nodes[2]: node 'a' is listed twice (first on line 2)"


def test_duplicate_node_names_from_two_hostlists(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes:
          - name: gpu[01-04]
          - name: gpu[03-05]
        """,
    )
    assert message == ":3: nodes[1]: nodes gpu[03-04] are listed twice (first on line 2)"


def test_name_and_host_expand_to_different_counts(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes:
          - name: gpu[01-04]
            host: 10.0.0.[1-3]
        """,
    )
    assert message.startswith(":2: nodes[0]: name 'gpu[01-04]' expands to 4 nodes but host '10.0.0.[1-3]' to 3")


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("node1; rm -rf /", "is not a hostname or IP address"),
        # `&` is nodeset intersection, so this one is refused by the nodeset grammar
        ("node1 && true", "an operator (, ! & ^) with nothing on one side"),
        ("$(reboot)", "is not a hostname or IP address"),
        ("`id`", "is not a hostname or IP address"),
        ("a b", "is not a hostname or IP address"),
        ("-oProxyCommand=x", "is not a hostname or IP address"),
        ("10.0.0.[1]; id", "is not a hostname or IP address"),
    ],
)
def test_host_with_shell_metacharacters(tmp_path: Path, host: str, reason: str) -> None:
    message = _error(tmp_path, f"nodes:\n  - name: node1\n    host: '{host}'\n")
    assert message.startswith(":2: nodes[0].host: "), message  # the line of the node entry
    assert reason in message


def test_name_with_a_space(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: 'gpu 1'\n")
    assert message == ":2: nodes[0].name: 'gpu 1' is not a node name (letters, digits, ._-)"


def test_bad_hostlist(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: a\n  - name: gpu[16-01]\n")
    assert message == ":3: nodes[1].name: 'gpu[16-01]': range '16-01' runs backwards; write it 01-16"


def test_bad_host_nodeset_names_the_host_field(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[01-02]\n    host: '10.0.0.[1-2'\n")
    assert message == ":2: nodes[0].host: '10.0.0.[1-2': unbalanced brackets (a '[' with no ']')"


def test_node_group_is_refused_with_the_fix(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: '@gpus'\n")
    # a plain '@gpus' is no nodeset expression, so it is refused as a name
    assert message == ":2: nodes[0].name: '@gpus' is not a node name (letters, digits, ._-)"
    message = _error(tmp_path, "nodes:\n  - name: 'gpu01,@gpus'\n")
    assert message == ":2: nodes[0].name: 'gpu01,@gpus': '@gpus' is a node group; write its nodes out"


def test_hostlist_size_limit(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: gpu[1-1000000]\n")
    assert message == ":2: nodes[0].name: 'gpu[1-1000000]': range '1-1000000' has more than 100000 hosts"


def test_mount_that_is_not_absolute(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes: [{name: a}]
        storage:
          mounts:
            - /scratch
            - mnt/lustre
        """,
    )
    assert message == ":5: storage.mounts[1]: 'mnt/lustre': a mount must be an absolute path"


def test_mount_listed_twice(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes: [{name: a}]\nstorage: {mounts: [/x, /x]}\n")
    assert ":2: storage.mounts: a mount is listed twice" in message


def test_egress_target_with_a_space(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes: [{name: a}]
        egress:
          targets:
            - https://ok.example.com/x
            - "https://mirror.example.com/a b"
        """,
    )
    assert message == ":5: egress.targets[1]: 'https://mirror.example.com/a b': contains characters a URL does not need"


@pytest.mark.parametrize("target", ["ftp://x/y", "https:///nohost", "https://[bad/x"])
def test_egress_target_that_is_not_a_url(tmp_path: Path, target: str) -> None:
    message = _error(tmp_path, f"nodes: [{{name: a}}]\negress:\n  targets:\n    - '{target}'\n")
    assert message.startswith(":4: egress.targets[0]: ") and "write a URL" in message


def test_bad_port_and_label(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes:
          - name: a
            port: 70000
          - name: b
            labels: {leaf: "x y"}
        """,
    )
    assert ":3: nodes[0].port: Input should be less than or equal to 65535" in message
    assert ":5: nodes[1].labels: label leaf: x y may use only letters" in message


def test_node_written_as_a_plain_string(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - gpu01\n")
    assert message == ":2: nodes[0]: write a mapping (key: value), not 'gpu01'"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(SourceError, match="no such file") as excinfo:
        load_inventory(path)
    assert str(path) in str(excinfo.value)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="cannot read") as excinfo:
        load_inventory(tmp_path)  # a directory
    assert str(tmp_path) in str(excinfo.value)
    if os.geteuid() != 0:  # root reads anything
        path = _write(tmp_path, "nodes: [{name: a}]\n")
        path.chmod(0)
        with pytest.raises(SourceError, match="cannot read"):
            load_inventory(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(SourceError, match="cannot read"):
        load_inventory(path)


def test_invalid_yaml(tmp_path: Path) -> None:
    message = _error(tmp_path, "nodes:\n  - name: [a\n")
    assert message.startswith(":3: not valid YAML: ")


def test_duplicate_yaml_keys(tmp_path: Path) -> None:
    message = _error(
        tmp_path,
        """
        nodes:
          - name: a
            host: x
            host: y
        """,
    )
    assert message == ":4: not valid YAML: duplicate key 'host'"


def test_empty_nodes_list(tmp_path: Path) -> None:
    assert _error(tmp_path, "name: x\nnodes: []\n") == ":2: nodes: list at least one node"


def test_no_nodes_key(tmp_path: Path) -> None:
    assert _error(tmp_path, "name: x\n") == ":1: nodes: required but missing"


@pytest.mark.parametrize("text", ["", "- a\n", "just text\n"])
def test_not_a_mapping(tmp_path: Path, text: str) -> None:
    assert "an inventory is a mapping with at least `nodes:`" in _error(tmp_path, text)


@pytest.mark.parametrize("text", ["nodes: [{name: a}]\n? [a, b]\n: 1\n", "nodes: [{name: a}]\n{a: 1}: 2\n"])
def test_key_that_is_a_list_or_mapping(tmp_path: Path, text: str) -> None:
    assert _error(tmp_path, text) == ":2: not valid YAML: a key must be a plain word, not a list or mapping"


def test_alias_inside_what_it_names(tmp_path: Path) -> None:
    assert "an alias (*name) refers to a list or mapping that contains it" in _error(tmp_path, "a: &x [*x]\n")


def test_merge_keys_work(tmp_path: Path) -> None:
    inventory = _load(
        tmp_path,
        """
        defaults: &common {user: root, port: 22}
        nodes:
          - name: a
            <<: *common
            port: 2222
        """,
    )
    assert (inventory.nodes[0].user, inventory.nodes[0].port) == ("root", 2222)


def test_rdma_ports_are_normalised_and_checked(tmp_path: Path) -> None:
    from pytest_fabric.config.inventory import load_inventory
    from pytest_fabric.config.yamlsource import SourceError

    good = tmp_path / "good.yaml"
    good.write_text("nodes:\n  - name: gpu[1-2]\n    rdma_ports: [mlx5_0, mlx5_1/2]\n")
    assert load_inventory(good).node("gpu2").rdma_ports == ("mlx5_0/1", "mlx5_1/2")
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - name: gpu1\n    rdma_ports: ['mlx5_0; reboot']\n")
    try:
        load_inventory(bad)
    except SourceError as exc:
        assert "bad.yaml:3" in str(exc) and "rdma_ports" in str(exc) and "DEVICE/PORT" in str(exc)
    else:
        raise AssertionError("a port name with a shell metacharacter was accepted")


# -- errors a user can act on, all at once ---------------------------------------------------------


def test_missing_identity_file_is_a_load_error_naming_file_and_line(tmp_path: Path) -> None:
    key = tmp_path / "id_real"
    key.write_text("key")
    message = _error(tmp_path, f"""
        defaults:
          identity_file: /no/such/key
        nodes:
          - name: gpu[01-04]
          - name: head
            identity_file: {tmp_path}/id_gone
          - name: other
            identity_file: {key}
          - name: here
            host: localhost
        """)
    assert message.replace(str(tmp_path / "inv.yaml"), "").splitlines() == [
        ":2: defaults.identity_file: /no/such/key: no such file; give the private key ssh logs in with "
        "(ssh -i), e.g. ~/.ssh/id_ed25519",
        f":6: nodes[1].identity_file: {tmp_path}/id_gone: no such file; give the private key ssh logs in with "
        "(ssh -i), e.g. ~/.ssh/id_ed25519",
    ]


def test_connect_timeout_takes_a_duration(tmp_path: Path) -> None:
    inventory = _load(tmp_path, """
        defaults: {connect_timeout: 10 s}
        nodes:
          - name: a
          - name: b
            connect_timeout: 500 ms
          - name: c
            connect_timeout: 3
        """)
    assert [n.connect_timeout for n in inventory.nodes] == [10.0, 0.5, 3.0]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("ten", "'ten' is not a duration; write seconds (10) or a duration with its unit (10 s, 500 ms)"),
        ("10 Gb/s", "'10 Gb/s' is not a duration; write seconds (10) or a duration with its unit (10 s, 500 ms)"),
        ("0", "connect_timeout is 0 s; give more than 0 and at most 600 s"),
        ("20 min", "connect_timeout is 1200 s; give more than 0 and at most 600 s"),
    ],
)
def test_connect_timeout_errors_say_what_to_write(tmp_path: Path, value: str, expected: str) -> None:
    message = _error(tmp_path, f"nodes:\n  - name: a\n    connect_timeout: {value}\n")
    assert message == f":3: nodes[0].connect_timeout: {expected}"


def test_all_errors_of_one_inventory_at_once(tmp_path: Path) -> None:
    message = _error(tmp_path, """
        defaults:
          connect_timeout: 10 parsecs
        nodes:
          - name: gpu[01-04]
            host: 10.0.0.[1-3]
          - name: b
            prot: 22
          - name: c
            identity_file: /no/such/key
          - name: c
        """)
    lines = message.replace(str(tmp_path / "inv.yaml"), "").splitlines()
    assert len(lines) == 5, message
    assert lines[0].startswith(":2: defaults.connect_timeout: '10 parsecs' is not a duration")
    assert lines[1].startswith(":4: nodes[0]: name 'gpu[01-04]' expands to 4 nodes but host")
    assert lines[2] == ":7: nodes[1].prot: unknown key (did you mean 'port'?)"
    assert lines[3].startswith(":9: nodes[2].identity_file: /no/such/key: no such file")
    assert lines[4] == ":10: nodes[3]: node 'c' is listed twice (first on line 8)"


def test_yaml_tab_error_says_to_use_spaces(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_text("nodes:\n\t- name: a\n")
    with pytest.raises(SourceError) as excinfo:
        load_inventory(path)
    assert str(excinfo.value) == (
        f"{path}:2: not valid YAML: a tab where YAML needs spaces; indent with spaces, not tabs"
    )


def test_egress_concurrency_defaults_small_and_a_bad_value_names_its_line(tmp_path: Path) -> None:
    from pytest_fabric.config.inventory import DEFAULT_EGRESS_CONCURRENCY

    plain = _load(tmp_path, """
        nodes: [{name: n1, host: 10.0.0.1}]
        egress: {targets: [https://mirror.example.com/1GB.bin]}
        """)
    assert plain.egress_concurrency == DEFAULT_EGRESS_CONCURRENCY == 8
    capped = _load(tmp_path, """
        nodes: [{name: n1, host: 10.0.0.1}]
        egress:
          targets: [https://mirror.example.com/1GB.bin]
          concurrency: 2
        """)
    assert capped.egress_concurrency == 2
    message = _error(tmp_path, """
        nodes: [{name: n1, host: 10.0.0.1}]
        egress:
          targets: [https://mirror.example.com/1GB.bin]
          concurrency: 0
        """)
    assert message.startswith(":4: egress.concurrency: "), message
    assert "greater than or equal to 1" in message
