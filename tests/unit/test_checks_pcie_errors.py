"""intra_node.pcie_errors judged on readings before and after the run: replays growing, uncorrectable AER."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from unit.parsers.corpus import corpus_root

from pytest_fabric.checks.pcie_errors import (
    AER_COMMAND,
    PcieErrors,
    PcieReading,
    pcie_measurement,
    read_pcie,
)
from pytest_fabric.config.inventory import Node
from pytest_fabric.config.units import parse_quantity
from pytest_fabric.judge.verdict import Expectation, judge
from pytest_fabric.parsers.aer_sysfs import parse_aer_sysfs
from pytest_fabric.probes.base import MeasurementError
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.mock import CannedCommand, MockTransport
from pytest_fabric.transport.pool import ConnectionPool

AER = Path(__file__).resolve().parents[1] / "data" / "aer-sysfs" / "2gpu-2cx7-nonfatal-gpu1-fatal-nic1-constructed.txt"
GPUS = ("0000:18:00.0", "0000:2a:00.0")


def reading(replays: dict[str, int], *, at: float, aer: bool = True, uptime: float = 86400.0) -> PcieReading:
    devices = {d.bdf: d for d in parse_aer_sysfs(AER.read_text())} if aer else {}
    return PcieReading("gpu07", replays, devices, uptime, (), at)


def failures(settings: PcieErrors, before: PcieReading, after: PcieReading) -> list[str]:
    measured = pcie_measurement(before, after, settings)
    out = []
    for name, op, value in settings.bounds():
        expectation = Expectation("intra_node", "pcie_errors", op, value, f"intra_node.pcie_errors.{name}")
        out += [v.message for part, m in measured.parts if not (v := judge(part, m, expectation)).passed]
    return out


def test_defaults_are_dcgms_replay_rate_and_no_uncorrectable_error() -> None:
    settings = PcieErrors()
    assert (settings.replays_per_minute, settings.aer_uncorrectable_max) == (parse_quantity(8), parse_quantity(0))
    assert settings.aer_correctable_per_minute is None and settings.aer is True
    assert [name for name, _, _ in PcieErrors(aer=False).bounds()] == ["replays_per_minute"]


def test_replays_growing_during_the_run_fail_that_gpu() -> None:
    before = reading({GPUS[0]: 120, GPUS[1]: 0}, at=1000.0, aer=False)
    after = reading({GPUS[0]: 120, GPUS[1]: 400}, at=1060.0, aer=False)  # 400 in a minute
    (message,) = failures(PcieErrors(aer=False), before, after)
    assert message.startswith("gpu07 GPU 0000:2a:00.0: replays_per_minute measured ")
    assert "+400 in 60 s of the run" in message


def test_a_few_replays_since_boot_pass() -> None:
    before = reading({GPUS[0]: 120, GPUS[1]: 58}, at=1000.0, aer=False)
    after = reading({GPUS[0]: 121, GPUS[1]: 58}, at=1060.0, aer=False)
    assert failures(PcieErrors(aer=False), before, after) == []


def test_uncorrectable_aer_fails_the_gpu_and_the_nic_named_by_bus_id() -> None:
    before = reading({GPUS[0]: 0, GPUS[1]: 0}, at=1000.0)
    after = reading({GPUS[0]: 0, GPUS[1]: 0}, at=1060.0)
    messages = failures(PcieErrors(), before, after)
    assert [m.split(": ", 1)[0] for m in messages] == ["gpu07 GPU 0000:2a:00.0", "gpu07 NIC 0000:29:00.0"]
    assert "aer_uncorrectable_max measured 2" in messages[0] and "CmpltTO 2" in messages[0]
    assert "SDES 1" in messages[1]


def test_a_counter_that_went_down_is_an_error_not_a_pass() -> None:
    with pytest.raises(MeasurementError, match="went from 50 to 3 during the run"):
        pcie_measurement(reading({GPUS[0]: 50}, at=0.0, aer=False), reading({GPUS[0]: 3}, at=60.0, aer=False),
                         PcieErrors(aer=False))


def test_no_reading_from_before_the_run_is_an_error() -> None:
    with pytest.raises(MeasurementError, match="no PCIe reading from before the run"):
        pcie_measurement(None, reading({GPUS[0]: 0}, at=60.0), PcieErrors())


def _node(aer_text: str) -> NodeHandle:
    xml = corpus_root() / "nvidia-smi-xml" / "tesla-t4-dtd-v11-515.105.01.xml"
    if not xml.is_file():
        pytest.skip(f"{xml} is not here (the shared corpus, FABRIC_CORPUS)")
    transport = MockTransport("gpu07", {
        r"^nvidia-smi -q -x$": CannedCommand(stdout=xml.read_text()),
        r"^cat /proc/uptime$": CannedCommand(stdout="86400.00 170000.00\n"),
        "^" + re.escape(AER_COMMAND) + "$": CannedCommand(stdout=aer_text),
    })
    return NodeHandle(Node(name="gpu07", host="10.0.0.7"), ConnectionPool(lambda _n: transport))


def test_a_gpu_without_aer_files_is_an_error_naming_it_and_the_fix() -> None:
    node = _node("==> 0000:00:1e.0 0x10de 0x030200 <==\n")  # the T4's function, no aer_dev_* files
    with pytest.raises(MeasurementError) as caught:
        read_pcie(node)
    assert "no AER counters for 0000:00:1e.0" in str(caught.value)
    assert "aer: false" in str(caught.value) and "CONFIG_PCIEAER" in str(caught.value)
    reading = read_pcie(node, aer=False)  # the replay counters alone
    assert reading.replays == {"0000:00:1e.0": 0} and reading.uptime_s == 86400.0


def test_the_aer_command_reads_physical_functions_and_leaves_out_virtual_ones(tmp_path: Path) -> None:
    for bdf, vendor, pci_class in (("0000:18:00.0", "0x10de", "0x030200"), ("0000:17:00.0", "0x15b3", "0x020700"),
                                   ("0000:17:00.2", "0x15b3", "0x020700"), ("0000:00:1f.0", "0x8086", "0x060100")):
        (tmp_path / bdf).mkdir()
        (tmp_path / bdf / "vendor").write_text(vendor + "\n")
        (tmp_path / bdf / "class").write_text(pci_class + "\n")
        if bdf != "0000:17:00.2":
            (tmp_path / bdf / "aer_dev_fatal").write_text("DLP 0\nTOTAL_ERR_FATAL 0\n")
    (tmp_path / "0000:17:00.2" / "physfn").symlink_to(tmp_path / "0000:17:00.0")  # an SR-IOV VF
    command = AER_COMMAND.replace("/sys/bus/pci/devices", str(tmp_path))
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=True)
    assert [(d.bdf, d.total("aer_dev_fatal")) for d in parse_aer_sysfs(done.stdout)] == [
        ("0000:17:00.0", 0), ("0000:18:00.0", 0)]
