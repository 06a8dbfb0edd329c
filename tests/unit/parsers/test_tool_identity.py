"""The tool identity listing: a captured run, and what a node may print into it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.tool_identity import ELF_MAGIC, parse

DATA = Path(__file__).resolve().parents[2] / "data" / "tool-identity"


def test_captured_listing_reads_each_tool() -> None:
    found = parse((DATA / "listing-fio-iperf3-missing-pyenv-shim-debian12.txt").read_text())
    iperf3 = found.tools["iperf3"]
    assert iperf3.path == iperf3.resolved == "/usr/bin/iperf3"
    assert iperf3.sha256 == "e8aa8bc4dc8837e0aa93845f2c805cc2af7365a50ac18a26b88f1ca85307e909"
    assert iperf3.is_elf and iperf3.magic == ELF_MAGIC and not iperf3.is_script
    assert iperf3.build_id == "48658f2c99fbb24a4e33aadafb68b3751c164e50"
    assert (iperf3.package_manager, iperf3.package, iperf3.verify, iperf3.verify_rc) == ("dpkg", "iperf3", (), 0)
    assert found.tools["nosuch$(x)"].missing
    shim = found.tools["pytest"]
    assert shim.is_script and shim.shebang == "#!/usr/bin/env bash" and not shim.is_elf
    assert shim.package is None and shim.package_manager == "dpkg" and shim.build_id is None
    assert found.ld_preload is None and found.ld_so_preload == ()


def test_verification_lines_and_preloads_are_kept() -> None:
    text = (
        "tool\tib_write_bw\t/usr/bin/ib_write_bw\t/usr/bin/ib_write_bw\n"
        "sha256\t00ff\nmagic\t23212f62\nshebang\t#!/bin/sh\nbuild_id\t\n"
        "package\tdpkg\tperftest\nverify\t??5??????   /usr/bin/ib_write_bw\nverify_rc\t0\n"
        "ld_preload\t/opt/x/libfast.so\n"
        "ld_so_preload\t# a comment\nld_so_preload\t/lib/libhook.so\n"
    )
    found = parse(text)
    tool = found.tools["ib_write_bw"]
    assert tool.verify == ("??5??????   /usr/bin/ib_write_bw",)
    assert tool.is_script and not tool.is_elf
    assert found.ld_preload == "/opt/x/libfast.so"
    assert found.ld_so_preload == ("/lib/libhook.so",)


def test_a_hash_that_is_not_hex_is_not_kept() -> None:
    found = parse("tool\tfio\t/usr/bin/fio\t/usr/bin/fio\nsha256\tnot-a-hash; rm -rf /\nld_preload\t\n")
    assert found.tools["fio"].sha256 is None


@pytest.mark.parametrize("text", ["", "hello\n", "Last login: today\n"])
def test_no_listing_is_refused(text: str) -> None:
    with pytest.raises((UnrecognizedOutput, ParseError)):
        parse(text)


def test_an_unknown_record_names_its_line() -> None:
    with pytest.raises(ParseError, match="line 2"):
        parse("tool\tfio\t/usr/bin/fio\t/usr/bin/fio\nbogus\tx\n")


def test_interface_counters_parse() -> None:
    from pytest_fabric.parsers import netdev_statistics

    assert netdev_statistics.parse("tx_bytes 1234\nrx_bytes 99\n") == {"tx_bytes": 1234, "rx_bytes": 99}
    with pytest.raises(ParseError, match="not a counter"):
        netdev_statistics.parse("tx_bytes \n")
    with pytest.raises(UnrecognizedOutput):
        netdev_statistics.parse("")
