"""The inventory's ``tools:``: the tenant's own binaries, pinned by path and SHA-256, checked at load."""

from __future__ import annotations

import hashlib
import textwrap
from pathlib import Path

import pytest

from pytest_fabric.config.inventory import load_inventory
from pytest_fabric.config.yamlsource import SourceError


def _binary(tmp_path: Path, name: str = "iperf3", content: bytes = b"\x7fELF tenant build") -> tuple[Path, str]:
    path = tmp_path / "bin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(content)
    return path, hashlib.sha256(content).hexdigest()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inv.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def _error(path: Path) -> str:
    with pytest.raises(SourceError) as excinfo:
        load_inventory(path)
    return str(excinfo.value)


def test_a_pinned_tool_loads_with_its_path_resolved_beside_the_inventory(tmp_path: Path) -> None:
    _, digest = _binary(tmp_path)
    inv = load_inventory(_write(tmp_path, f"""
        nodes: [{{name: n1, host: localhost}}]
        tools:
          iperf3: {{path: ./bin/iperf3, sha256: {digest.upper()}}}
    """))
    (pin,) = inv.tools
    assert pin.name == "iperf3"
    assert pin.source == (tmp_path / "bin" / "iperf3").resolve()
    assert pin.sha256 == digest  # written in capitals: compared as the hex it is
    assert inv.tool("iperf3") == pin and inv.tool("fio") is None


def test_no_tools_is_the_providers_tools(tmp_path: Path) -> None:
    assert load_inventory(_write(tmp_path, "nodes: [{name: n1, host: localhost}]\n")).tools == ()


def test_a_file_that_is_not_the_one_pinned_is_refused_at_load_with_its_line(tmp_path: Path) -> None:
    binary, _ = _binary(tmp_path)
    wrong = "0" * 64
    path = _write(tmp_path, f"""
        nodes: [{{name: n1, host: localhost}}]
        tools:
          iperf3:
            path: ./bin/iperf3
            sha256: {wrong}
    """)
    message = _error(path)
    assert message.startswith(f"{path}:5: tools.iperf3.sha256: "), message
    assert hashlib.sha256(binary.read_bytes()).hexdigest() in message and wrong in message
    assert "sha256sum" in message  # the fix says how to pin the file as it is


def test_a_missing_file_names_its_line_and_the_resolved_path(tmp_path: Path) -> None:
    path = _write(tmp_path, f"""
        nodes: [{{name: n1, host: localhost}}]
        tools:
          fio: {{path: ./bin/nope, sha256: {"a" * 64}}}
    """)
    message = _error(path)
    assert message.startswith(f"{path}:3: tools.fio.path: ./bin/nope"), message
    assert str(tmp_path / "bin" / "nope") in message and "no such file" in message


@pytest.mark.parametrize(("entry", "field", "said"), [
    ("nvidia-smi: {path: ./bin/iperf3, sha256: HASH}", "tools.nvidia-smi", "iperf3, fio, ib_write_bw, ib_write_lat"),
    ("iperf3: {path: ./bin/iperf3, sha256: abc}", "tools.iperf3.sha256", "64 hexadecimal digits"),
    ("iperf3: {path: ./bin/iperf3}", "tools.iperf3.sha256", "required but missing"),
    ("iperf3: {path: ./bin/iperf3, sha256: HASH, sha: x}", "tools.iperf3.sha", "unknown key (did you mean 'sha256'?)"),
    ("'ipe$(x)': {path: ./bin/iperf3, sha256: HASH}", "tools.ipe$(x)", "iperf3, fio"),
])
def test_wrong_entries_name_the_field(tmp_path: Path, entry: str, field: str, said: str) -> None:
    _, digest = _binary(tmp_path)
    path = _write(tmp_path, "nodes: [{name: n1, host: localhost}]\ntools:\n  " + entry.replace("HASH", digest) + "\n")
    message = _error(path)
    assert message.startswith(f"{path}:3: {field}: "), message
    assert said in message, message


def test_slurm_nodes_are_refused_with_the_fix(tmp_path: Path) -> None:
    _, digest = _binary(tmp_path)
    path = _write(tmp_path, f"""
        nodes: [{{name: n1, host: localhost, transport: slurm}}]
        tools:
          iperf3: {{path: ./bin/iperf3, sha256: {digest}}}
    """)
    message = _error(path)
    assert message.startswith(f"{path}:2: tools: "), message
    assert "Slurm" in message and "n1" in message and "transport: ssh" in message
