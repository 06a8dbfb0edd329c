"""ibv_devices on the recorded corpus."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_fabric.parsers.base import ParseError, UnrecognizedOutput
from pytest_fabric.parsers.ibv_devices import IbvDeviceEntry, parse_ibv_devices

Read = Callable[[str], str]


def test_four_mlx5(corpus_text: Read) -> None:
    devices = parse_ibv_devices(corpus_text("ibv_devices/four-mlx5.txt"))
    assert [d.name for d in devices] == ["mlx5_3", "mlx5_2", "mlx5_1", "mlx5_0"]
    assert devices[-1] == IbvDeviceEntry("mlx5_0", "248a07030049d508")


def test_single_mlx4(corpus_text: Read) -> None:
    assert parse_ibv_devices(corpus_text("ibv_devices/single-mlx4.txt")) == [IbvDeviceEntry("mlx4_0", "0002c90300a4e720")]


def test_header_only_is_empty_and_bad_lines_fail() -> None:
    assert parse_ibv_devices("    device          \t   node GUID\n    ------          \t----------------\n") == []
    with pytest.raises(ParseError, match=r"ibv_devices \(line 3\)"):
        parse_ibv_devices("    device\t   node GUID\n    ------\t----\n    mlx5_0 nothex\n")
    with pytest.raises(UnrecognizedOutput, match="^ibv_devices"):
        parse_ibv_devices("mlx5_0 port 1 ==> ib0 (Up)\n")
