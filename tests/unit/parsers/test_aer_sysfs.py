"""PCIe AER counters from sysfs (aer_dev_correctable, aer_dev_fatal, aer_dev_nonfatal)."""

from __future__ import annotations

import pytest
from unit.parsers.conftest import DATA

from pytest_fabric.parsers.aer_sysfs import parse_aer_file, parse_aer_sysfs
from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput

AER = DATA / "aer-sysfs"


def test_gpus_and_nics_with_their_totals() -> None:
    devices = parse_aer_sysfs((AER / "2gpu-2cx7-nonfatal-gpu1-fatal-nic1-constructed.txt").read_text())
    assert [(d.bdf, d.vendor, d.pci_class) for d in devices] == [
        ("0000:18:00.0", "0x10de", "0x030200"), ("0000:2a:00.0", "0x10de", "0x030200"),
        ("0000:17:00.0", "0x15b3", "0x020700"), ("0000:29:00.0", "0x15b3", "0x020700")]
    gpu1, nic1 = devices[1], devices[3]
    assert (gpu1.correctable, gpu1.uncorrectable) == (15, 2)
    assert gpu1.files["aer_dev_correctable"]["BadTLP"] == 3
    assert gpu1.files["aer_dev_nonfatal"]["CmpltTO"] == 2
    assert (nic1.correctable, nic1.uncorrectable, nic1.total("aer_dev_fatal")) == (0, 1, 1)
    assert (devices[0].correctable, devices[0].uncorrectable) == (0, 0)


def test_a_device_without_aer_files_has_no_counts_not_zero() -> None:
    devices = parse_aer_sysfs((AER / "no-aer-capability-constructed.txt").read_text())
    assert [d.has_aer for d in devices] == [False, False]
    assert devices[0].correctable is None and devices[0].uncorrectable is None


def test_no_device_is_an_empty_list() -> None:
    assert parse_aer_sysfs("") == []


def test_a_file_without_its_total_is_summed() -> None:
    assert parse_aer_file("RxErr 2\nBadTLP 1\n") == {"RxErr": 2, "BadTLP": 1}
    (device,) = parse_aer_sysfs("==> 0000:18:00.0 0x10de 0x030200 <==\n--- aer_dev_correctable\nRxErr 2\nBadTLP 1\n")
    assert device.correctable == 3


def test_broken_lines_name_the_tool() -> None:
    with pytest.raises(UnrecognizedOutput, match="aer-sysfs"):
        parse_aer_sysfs("RxErr 0\n")
    with pytest.raises(ParseError, match="aer-sysfs .line 3."):
        parse_aer_sysfs("==> 0000:18:00.0 0x10de 0x030200 <==\n--- aer_dev_fatal\nDLP zero\n")
