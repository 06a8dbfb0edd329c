"""Profile keys of the software layer and of the affinity, GPU health and switch link checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.profile import LAYERS, load_profile
from pytest_fabric.yamlsource import SourceError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\n" + text)
    return path


def test_software_layer_keys(tmp_path: Path) -> None:
    profile = load_profile(str(write(tmp_path, """software:
  preflight: {tools: [jq]}
  gpudirect: peermem
  memlock: unlimited
  pcie_acs: off
  software_consistency: [driver, hca_firmware]
  min_versions: {driver: "550.54.15", hca_firmware: "28.39.1002"}
intra_node:
  gpu_nic_affinity: {}
  gpu_health: 2
inter_node:
  switch_links: {width: 4, rate: 400 Gb/s}
""")))
    assert LAYERS[0] == "software" and profile.set_checks()[:6] == [
        "software.preflight", "software.gpudirect", "software.memlock", "software.pcie_acs",
        "software.software_consistency", "software.min_versions"]
    software = profile.document.software
    assert software.pcie_acs is not None and software.pcie_acs.value == "off"  # YAML's bare `off` is false
    assert software.software_consistency is not None and software.software_consistency.components == ["driver", "hca_firmware"]
    assert software.min_versions is not None and software.min_versions.pins() == {"driver": "550.54.15",
                                                                                  "hca_firmware": "28.39.1002"}
    assert [(e.key, e.value) for e in profile.expectations("software", "memlock")] == [("software.memlock.value", "unlimited")]
    assert profile.document.intra_node.gpu_health is not None and profile.document.intra_node.gpu_health.level == 2
    links = profile.document.inter_node.switch_links
    assert links is not None and links.width == 4 and str(links.rate) == "400 Gb/s" and links.could_be


def test_memlock_floor(tmp_path: Path) -> None:
    profile = load_profile(str(write(tmp_path, "software: {memlock: 64 GiB}\n")))
    ((key, value),) = [(e.key, str(e.value)) for e in profile.expectations("software", "memlock")]
    assert (key, value) == ("software.memlock.min", "64 GiB")


def test_unquoted_version_is_an_error_naming_the_line(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"p.yaml:4: software.min_versions.cuda: write the version in quotes \('12.1'\)"):
        load_profile(str(write(tmp_path, "software:\n  min_versions:\n    cuda: 12.10\n")))
    with pytest.raises(SourceError, match="give at least one of kernel, driver"):
        load_profile(str(write(tmp_path, "software:\n  min_versions: {}\n")))
