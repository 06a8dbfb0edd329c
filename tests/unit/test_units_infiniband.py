"""'90% line' of an InfiniBand link is a share of its data rate, not of the rate it reports."""

from __future__ import annotations

import pytest

from pytest_fabric.config.units import infiniband_data_rate, parse_quantity


@pytest.mark.parametrize(("reported", "speed", "data"), [
    ("10 Gb/s", "10 Gb/sec (4X SDR)", "8 Gb/s"),
    ("20 Gb/s", "20 Gb/sec (4X DDR)", "16 Gb/s"),
    ("40 Gb/s", "40 Gb/sec (4X QDR)", "32 Gb/s"),
    ("40 Gb/s", "40 Gb/sec (4X FDR10)", "40 Gb/s"),
    ("100 Gb/s", "100 Gb/sec (4X EDR)", "100 Gb/s"),
    ("200 Gb/s", "200 Gb/sec (4X HDR)", "200 Gb/s"),
    ("400 Gb/s", "400 Gb/sec (4X NDR)", "400 Gb/s"),
    ("120 Gb/s", "12X QDR", "96 Gb/s"),
])
def test_data_rate_of_each_infiniband_speed(reported: str, speed: str, data: str) -> None:
    rate = infiniband_data_rate(parse_quantity(reported), speed)
    assert rate == parse_quantity(data)


def test_fdr_is_56_signalled_for_54_5_of_data_and_90_percent_line_is_of_that() -> None:
    rate = infiniband_data_rate(parse_quantity("56 Gb/s"), "56 Gb/sec (4X FDR)")
    assert rate is not None and float(rate.to("Gb/s")) == pytest.approx(54.545, abs=0.001)
    assert "64b/66b" in rate.text
    assert float(parse_quantity("90% line").of(rate).to("Gb/s")) == pytest.approx(49.09, abs=0.01)


def test_a_rate_without_a_named_speed_has_no_data_rate() -> None:
    # 40 Gb/s is QDR (32 of data) or FDR10 (40 of data): the number alone cannot say which.
    assert infiniband_data_rate(parse_quantity("40 Gb/s"), None) is None
    assert infiniband_data_rate(parse_quantity("40 Gb/s"), "Active") is None
