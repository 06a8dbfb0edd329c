"""Names and labels are the text the user wrote, not what YAML 1.1 typing makes of it."""

from __future__ import annotations

from pathlib import Path

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import loads

INVENTORY = """\
name: 2024
nodes:
  - name: 010
    host: localhost
    labels: {leaf: 010, spine: no, rack: 3, 0x1: on, ratio: 1.50}
  - name: gpu02
    host: localhost
    labels:
      leaf: '010'
"""


def test_labels_and_names_keep_their_text(tmp_path: Path) -> None:
    # Before: leaf: 010 was the octal 8 ("8"), spine: no was False ("False"); `name: 010` was refused.
    path = tmp_path / "inv.yaml"
    path.write_text(INVENTORY, encoding="utf-8")
    inventory = load_inventory(path)
    assert inventory.name == "2024"
    assert inventory.node_names == ["010", "gpu02"]
    assert inventory.nodes[0].labels == {"leaf": "010", "spine": "no", "rack": "3", "0x1": "on", "ratio": "1.50"}
    # quoted or not, the same leaf: the pairing puts them together
    assert inventory.nodes[0].labels["leaf"] == inventory.nodes[1].labels["leaf"]


def test_other_values_keep_yaml_typing() -> None:
    data, lines = loads("port: 022\nlabels: {leaf: 010}\nflag: no\n", "x.yaml", as_written=lambda loc: loc[:1] == ("labels",))
    assert data == {"port": 18, "labels": {"leaf": "010"}, "flag": False}
    assert lines[("labels", "leaf")] == 2
