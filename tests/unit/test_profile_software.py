"""Profile keys of the software layer and of the affinity, GPU health and switch link checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.checks.builtin import load_profile
from pytest_fabric.config.profile import LAYERS
from pytest_fabric.config.yamlsource import SourceError


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


@pytest.mark.parametrize("tool", ["jq$(touch ~/X)", 'x"; touch ~/Y; echo "', "y`touch ~/Z`", "-v", "/usr/bin/jq",
                                  "a b", "", "..", "j\nq"])
def test_a_preflight_tool_that_is_not_a_program_name_is_refused(tmp_path: Path, tool: str) -> None:
    """Issue 27: these names ran as code on every node; now the profile does not load."""
    text = "software:\n  preflight:\n    tools:\n      - jq\n      - " + repr(tool).replace("\\n", "\\n") + "\n"
    if "\n" in tool:
        text = text.replace(repr(tool), '"j\\nq"')
    with pytest.raises(SourceError) as excinfo:
        load_profile(str(write(tmp_path, text)))
    message = str(excinfo.value)
    assert message.startswith(f"{tmp_path / 'p.yaml'}:6: software.preflight.tools[1]: {tool!r}"), message
    assert "A-Z a-z 0-9 . _ + -" in message, message


def test_preflight_tools_that_are_program_names_load(tmp_path: Path) -> None:
    profile = load_profile(str(write(tmp_path, "software: {preflight: {tools: [jq, g++, python3.11, all_reduce_perf]}}\n")))
    assert profile.document.software.preflight is not None
    assert profile.document.software.preflight.tools == ["jq", "g++", "python3.11", "all_reduce_perf"]


@pytest.mark.parametrize("name", ["-v", "-oX/1", ".hidden"])
def test_a_port_name_that_would_read_as_an_option_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SourceError, match=rf"p.yaml:\d+: inter_node.ports.names.*{name!r} is not an RDMA port"):
        load_profile(str(write(tmp_path, f"inter_node:\n  ports:\n    names: ['mlx5_0', '{name}']\n")))
