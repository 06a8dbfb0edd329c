"""One machine listed twice under two names is refused at load: a pair of it would be measured
against itself (16 Gb/s on a 10 Gb/s link passed) -- issue 33."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import SourceError


def _load_error(tmp_path: Path, text: str) -> str:
    path = tmp_path / "inv.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    with pytest.raises(SourceError) as excinfo:
        load_inventory(path)
    return str(excinfo.value)


def test_two_names_for_one_address_are_refused_naming_both(tmp_path: Path) -> None:
    message = _load_error(tmp_path, """
        nodes:
          - {name: gpu01, host: 10.0.0.1}
          - {name: gpu02, host: 10.0.0.2}
          - {name: gpu03, host: 10.0.0.1}
        """)
    assert f"{tmp_path / 'inv.yaml'}:4: nodes[2]: node 'gpu03' is 10.0.0.1 port 22, as node 'gpu01' (line 2)" in message
    assert "one machine listed twice" in message


def test_a_data_address_given_twice_is_refused(tmp_path: Path) -> None:
    message = _load_error(tmp_path, """
        nodes:
          - {name: gpu01, host: a.example, data_address: 192.168.1.1}
          - {name: gpu02, host: b.example, data_address: 192.168.1.1}
        """)
    assert "nodes[1]: node 'gpu02' sends and receives data at 192.168.1.1, as node 'gpu01' (line 2)" in message


def test_one_host_on_two_ports_is_two_sshds_and_local_nodes_are_this_machine(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("nodes:\n  - {name: a, host: 127.0.0.1, port: 2201}\n  - {name: b, host: 127.0.0.1, port: 2202}\n"
                    "  - {name: l1, host: localhost}\n  - {name: l2, host: localhost}\n")
    assert load_inventory(path).node_names == ["a", "b", "l1", "l2"]


def test_the_record_holds_the_inventorys_sha256(pytester: pytest.Pytester) -> None:
    import hashlib
    import json

    inventory = pytester.makefile(".yaml", inv="nodes: [{name: local, host: localhost}]\n")
    record = pytester.path / "record.json"
    pytester.runpytest_subprocess("--cluster", str(inventory), "--profile", "localhost", "-m", "software",
                                  "-p", "no:cacheprovider", f"--conformance-json={record}", timeout=120)
    run = json.loads(record.read_text())["run"]
    assert run["inventory_sha256"] == hashlib.sha256(inventory.read_bytes()).hexdigest()
