"""The egress probe's pure parts: target ports, the connect script's lines, curl's -w line."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pytest_fabric.probes.egress import is_url, parse_connect_output, parse_curl_stats, target_port


@pytest.mark.parametrize(
    ("target", "port"),
    [
        ("https://mirror.example.com/100MB.bin", 443),
        ("http://10.0.0.1/x", 80),
        ("http://10.0.0.1:8080/x", 8080),
        ("mirror.example.com:8443", 8443),
        ("tcp://[::1]:22", 22),
        ("tcp://host-without-port", None),
    ],
)
def test_target_port(target: str, port: int | None) -> None:
    assert target_port(target) == port


def test_is_url() -> None:
    assert is_url("https://a/b") and is_url("http://a:1/b")
    assert not is_url("a:443") and not is_url("tcp://a:443")


def test_connect_output_medians_come_from_each_connect() -> None:
    out = parse_connect_output(
        "address 10.0.0.1\nconnect 1700000000.000100 1700000000.000400\n"
        "connect 1700000000,001000 1700000000,001250\nrc 0\n"
    )
    assert out.resolved and out.address == "10.0.0.1" and out.exit_code == 0
    assert out.seconds == (Decimal("0.000300"), Decimal("0.000250"))  # decimal comma read too


def test_connect_output_refused_and_unresolved() -> None:
    refused = parse_connect_output("address 10.0.0.1\nrc 3\n")
    assert refused.resolved and refused.exit_code == 3 and refused.seconds == ()
    assert not parse_connect_output("unresolved\n").resolved


@pytest.mark.parametrize("text", ["", "address 10.0.0.1\n", "address 10.0.0.1\nconnect\nrc 0\n"])
def test_connect_output_that_cannot_be_read(text: str) -> None:
    with pytest.raises(ValueError):
        parse_connect_output(text)


def test_curl_stats() -> None:
    stats = parse_curl_stats("\npytest-fabric-curl 200 20000000 187326511 0.106834\n")
    assert stats is not None
    assert (stats.http_code, stats.size_bytes, stats.time_total_s) == (200, 20000000, 0.106834)
    assert stats.speed_bytes_per_s == 187326511.0


def test_curl_stats_old_curl_floats_and_body_noise() -> None:
    # curl before 7.x printed speeds as floats; a body may precede our line
    stats = parse_curl_stats("<html>oops</html>\npytest-fabric-curl 404 153 1530.000 0,1\n")
    assert stats is not None and stats.http_code == 404 and stats.speed_bytes_per_s == 1530.0
    assert stats.time_total_s == 0.1


@pytest.mark.parametrize("text", ["", "curl: (7) Failed to connect", "pytest-fabric-curl 200 x y z\n"])
def test_curl_stats_absent(text: str) -> None:
    assert parse_curl_stats(text) is None
