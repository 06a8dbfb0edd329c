"""ethtool, ethtool -i and ethtool -S on the corpus and our samples."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.ethtool import (
    nonzero_error_stats,
    parse_ethtool,
    parse_ethtool_driver,
    parse_ethtool_stats,
)

Read = Callable[[str], str]
DATA = Path(__file__).resolve().parents[2] / "data"


def test_ixgbe_settings(corpus_text: Read) -> None:
    settings = parse_ethtool(corpus_text("ethtool/ixgbe-10g-fibre-link-up.txt"))
    assert (settings.interface, settings.speed_mbps, settings.duplex, settings.port) == ("eth4", 10000, "Full", "FIBRE")
    assert settings.auto_negotiation is True and settings.link_detected is True
    assert settings.supported_link_modes == ("1000baseT/Full", "10000baseT/Full")
    assert settings.fields["Transceiver"] == "external"


def test_ixgbe_driver_info(corpus_text: Read) -> None:
    info = parse_ethtool_driver(corpus_text("ethtool/ixgbe-driver-info-i.txt"))
    assert (info.driver, info.version, info.bus_info) == ("ixgbe", "5.3.7", "0000:01:00.0")
    assert info.firmware_version == "0x800003df, 255.65535.255"
    assert info.expansion_rom_version is None and info.supports_statistics is True


def test_the_settings_parser_rejects_driver_info(corpus_text: Read) -> None:
    with pytest.raises(UnrecognizedOutput, match=r"^ethtool \(line 1\)"):
        parse_ethtool(corpus_text("ethtool/ixgbe-driver-info-i.txt"))
    with pytest.raises(UnrecognizedOutput, match="^ethtool-i"):
        parse_ethtool_driver(corpus_text("ethtool/ixgbe-10g-fibre-link-up.txt"))


def test_non_root_settings_with_wol_warning() -> None:
    settings = parse_ethtool((DATA / "ethtool" / "mlx5-100g-nonroot-wol-warning-constructed.txt").read_text())
    assert (settings.interface, settings.speed_mbps, settings.lanes, settings.link_detected) == ("ens6", 100000, 4, True)
    assert settings.advertised_link_modes == ("100000baseSR4/Full",)


def test_link_down_unknown_speed() -> None:
    settings = parse_ethtool((DATA / "ethtool" / "link-down-unknown-speed-constructed.txt").read_text())
    assert (settings.speed_mbps, settings.link_detected, settings.duplex) == (None, False, "Unknown! (255)")


def test_statistics() -> None:
    stats = parse_ethtool_stats((DATA / "ethtool-S" / "mlx5-roce-sample-constructed.txt").read_text())
    assert stats["rx_prio3_pause"] == 4521 and stats["rx_bytes"] == 98765432100
    assert nonzero_error_stats(stats) == {"rx_crc_errors_phy": 3, "rx_discards_phy": 12, "link_down_events_phy": 1}


def test_errors() -> None:
    with pytest.raises(ToolReportedError, match="ethtool.*No such device"):
        parse_ethtool("Cannot get device settings: No such device\n")
    with pytest.raises(ToolReportedError, match="^ethtool-S.*no stats available"):
        parse_ethtool_stats("no stats available\n")
    with pytest.raises(ParseError, match=r"ethtool-S \(line 2\)"):
        parse_ethtool_stats("NIC statistics:\n     rx_packets: many\n")
    with pytest.raises(ParseError, match="ethtool.*Speed 'fast'"):
        parse_ethtool("Settings for eth0:\n\tSpeed: fast\n")
