"""Inventory values that could reach a node's shell are refused at load, one test per kind (issue 27).

Each error names the file and line, the value as written and what is allowed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import SourceError


def _error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "inv.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    with pytest.raises(SourceError) as excinfo:
        load_inventory(path)
    message = str(excinfo.value)
    assert message.startswith(f"{path}:"), message  # the file and a line
    return message.removeprefix(str(path))


# (kind, YAML whose 3rd line holds the hostile value, a word the message must say)
CASES = [
    ("name", "nodes:\n  - name: a\n  - {name: 'b$(touch X)'}\n", "node name"),
    ("host", "nodes:\n  - name: a\n  - {name: b, host: 'h;touch X'}\n", "hostname"),
    ("data_address", "nodes:\n  - name: a\n  - {name: b, data_address: '10.0.0.1`touch X`'}\n", "hostname"),
    ("user", "nodes:\n  - name: a\n  - {name: b, user: 'root$(touch X)'}\n", "user name"),
    ("identity_file", "nodes:\n  - name: a\n  - {name: b, identity_file: '~/k;touch X'}\n", "file path"),
    ("jump user", "nodes:\n  - name: a\n  - {name: b, jump: 'u$(touch X)@bastion'}\n", "jump"),
    ("jump host", "nodes:\n  - name: a\n  - {name: b, jump: 'u@-oProxyCommand=x'}\n", "jump"),
    ("rdma_ports", "nodes:\n  - name: a\n  - {name: b, rdma_ports: ['mlx5_0;touch X']}\n", "RDMA port"),
    ("labels", "nodes:\n  - name: a\n  - {name: b, labels: {rack: '3$(touch X)'}}\n", "label"),
    ("mount path", "nodes: [{name: a}]\nstorage:\n  mounts: ['/scratch;touch X']\n", "mount path"),
    ("fstype", "nodes: [{name: a}]\nstorage:\n  mounts: [{path: /x, fstype: 'nfs$(touch X)'}]\n", "filesystem type"),
    ("mount option", "nodes: [{name: a}]\nstorage:\n  mounts: [{path: /x, options: ['ro;touch X']}]\n", "mount option"),
    ("egress target", "nodes: [{name: a}]\negress:\n  targets: ['https://m/x$(touch X)']\n", "URL"),
    ("egress target, newline", 'nodes: [{name: a}]\negress:\n  targets: ["https://m/x\\ntouch X"]\n', "URL"),
    ("egress target, tab", 'nodes: [{name: a}]\negress:\n  targets: ["https://m/x\\ty"]\n', "URL"),
]


@pytest.mark.parametrize(("kind", "text", "says"), CASES, ids=[c[0] for c in CASES])
def test_a_hostile_value_is_refused_naming_line_and_value(tmp_path: Path, kind: str, text: str, says: str) -> None:
    message = _error(tmp_path, text)
    assert message.startswith(":3: "), message
    assert says in message, message
    assert "touch X" in message or "\\t" in message or "-oProxyCommand" in message, message  # the value as written


@pytest.mark.parametrize("target", ["http://m/f[1-3]", "http://m/f{a,b}", "https://m/x{,,}", "http://m/]"])
def test_a_url_curl_would_expand_is_refused_with_the_fix(tmp_path: Path, target: str) -> None:
    message = _error(tmp_path, f"nodes: [{{name: a}}]\negress:\n  targets: ['{target}']\n")
    assert message.startswith(f":3: egress.targets[0]: {target!r}"), message
    assert "percent-encode" in message and any(f"%{ord(c):02X}" in message for c in "[]{}"), message


def test_a_percent_encoded_url_loads(tmp_path: Path) -> None:
    path = tmp_path / "inv.yaml"
    path.write_text("nodes: [{name: a}]\negress:\n  targets: ['http://m/f%5B1-3%5D%7B%2C%7D', 'http://[::1]:8080/x']\n")
    assert load_inventory(path).egress_targets == ("http://m/f%5B1-3%5D%7B%2C%7D", "http://[::1]:8080/x")


@pytest.mark.parametrize("port", ["-v", "-oX/1", ".hidden/1"])
def test_an_rdma_port_that_would_read_as_an_option_is_refused(tmp_path: Path, port: str) -> None:
    # A device name reaches `perfquery -C DEVICE`, `rdma link show DEVICE/PORT` and NCCL_IB_HCA:
    # quoted, but a leading '-' could still be taken for an option.
    message = _error(tmp_path, f"nodes:\n  - name: a\n  - {{name: b, rdma_ports: ['{port}']}}\n")
    assert message.startswith(f":3: nodes[1].rdma_ports: {port!r} is not an RDMA port"), message
