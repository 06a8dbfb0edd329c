"""Egress targets that accept uploads: ``{url: ..., upload: true}`` beside plain strings."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import SourceError


def _write(tmp_path: Path, targets: str) -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text(f"nodes: [{{name: a}}]\negress:\n  targets:\n{targets}")
    return path


def test_plain_strings_and_mappings_mix(tmp_path: Path) -> None:
    inventory = load_inventory(
        _write(tmp_path, "    - https://mirror.example.com/x\n    - {url: 'http://10.0.0.1:8080/u', upload: true}\n"
               "    - {url: 'mirror.example.com:443'}\n")
    )
    assert inventory.egress_targets == ("https://mirror.example.com/x", "http://10.0.0.1:8080/u", "mirror.example.com:443")
    assert inventory.upload_targets == ("http://10.0.0.1:8080/u",)


def test_no_mapping_no_uploads(tmp_path: Path) -> None:
    assert load_inventory(_write(tmp_path, "    - https://a.example/x\n")).upload_targets == ()


def test_mapping_errors_name_line_and_field(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as info:
        load_inventory(_write(tmp_path, "    - https://a.example/x\n    - {url: 'ftp://b/x', uplod: true}\n"))
    message = str(info.value)
    assert ":5: egress.targets[1].url: 'ftp://b/x': write a URL" in message
    assert ":5: egress.targets[1].uplod: unknown key (did you mean 'upload'?)" in message
