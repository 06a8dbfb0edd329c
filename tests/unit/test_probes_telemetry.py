"""probes/telemetry.py's command in a real shell: the first field set nvidia-smi answers, and what it says when none.

A stand-in ``nvidia-smi`` on PATH refuses the fields an old driver does not know (as nvidia-smi does:
``Field "remapped_rows.pending" is not a valid field to query.``, exit 2); the command falls back to
the basic set and the parser reads it. This machine's own ports are read from its sysfs.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_fabric.parsers.telemetry import parse_telemetry
from pytest_fabric.probes.telemetry import sample_command

OLD_DRIVER = """#!/bin/sh
case "$*" in
  *remapped_rows*|*clocks_event_reasons*) echo 'Field "x" is not a valid field to query.'; exit 2 ;;
  *--query-gpu=*) echo '0, 1410, 0x0000000000000040'; echo '1, 1980, 0x0000000000000001' ;;
esac
"""
BROKEN = """#!/bin/sh
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."; exit 9
"""


def _sample(tmp_path: Path, script: str | None) -> str:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    if script is not None:
        tool = bindir / "nvidia-smi"
        tool.write_text(script)
        tool.chmod(0o755)
    path = f"{bindir}:/usr/bin:/bin" if script is not None else "/usr/bin:/bin"
    if script is None and any(Path(d, "nvidia-smi").exists() for d in ("/usr/bin", "/bin")):
        pytest.skip("this machine has an nvidia-smi of its own")
    done = subprocess.run(["sh", "-c", sample_command()], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PATH": path})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_an_old_driver_is_sampled_with_the_basic_set_and_its_throttling_read(tmp_path: Path) -> None:
    out = _sample(tmp_path, OLD_DRIVER)
    assert "## gpu clocks_throttle_reasons basic" in out
    by = {r.series: r for r in parse_telemetry(out).readings}
    assert by["gpu0 throttled"].value == 1 and "hw thermal slowdown" in by["gpu0 throttled"].text
    assert by["gpu1 throttled"].value == 0 and by["GPUs seen"].value == 2


def test_a_failing_nvidia_smi_is_a_reading_that_says_no(tmp_path: Path) -> None:
    t = parse_telemetry(_sample(tmp_path, BROKEN))
    answers = next(r for r in t.readings if r.series == "nvidia-smi answers")
    assert answers.value == 0 and "NVIDIA-SMI has failed" in answers.text


def test_without_nvidia_smi_the_ports_are_still_sampled(tmp_path: Path) -> None:
    t = parse_telemetry(_sample(tmp_path, None))
    assert t.not_sampled.get("gpu") == "no nvidia-smi on the node"
    assert any(r.series.endswith(" state") for r in t.readings) or "ports" in t.not_sampled
