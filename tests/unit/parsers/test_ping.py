"""ping parser on every recorded ping output."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.ping import parse

DATA = Path(__file__).resolve().parents[2] / "data" / "ping"

# file -> (transmitted, received, duplicates, loss %, rtt min/avg/max/mdev, reply lines)
EXPECTED = {
    "linux-duplicates-DUP.txt": (7, 7, 6, 0.0, (0.282, 0.305, 0.356, 0.024), 13),
    "linux-localhost-w5.txt": (6, 6, 0, 0.0, (0.035, 0.045, 0.062, 0.012), 6),
}


def test_every_ping_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "ping").iterdir()} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus(corpus: Path, name: str) -> None:
    tx, rx, dups, loss, rtt, replies = EXPECTED[name]
    result = parse((corpus / "ping" / name).read_text(encoding="utf-8"))
    assert (result.transmitted, result.received, result.duplicates, result.loss_percent) == (tx, rx, dups, loss)
    assert (result.rtt_min_ms, result.rtt_avg_ms, result.rtt_max_ms, result.rtt_mdev_ms) == rtt
    assert len(result.replies) == replies and result.payload_bytes == 56


def test_duplicate_replies_marked(corpus: Path) -> None:
    result = parse((corpus / "ping" / "linux-duplicates-DUP.txt").read_text(encoding="utf-8"))
    assert sum(r.duplicate for r in result.replies) == 6
    assert result.replies[1].seq == 1 and result.replies[1].duplicate and result.replies[1].time_ms == 0.298
    assert (result.host, result.time_ms, result.replies[0].ttl) == ("192.168.1.2", 6142, 254)


def test_all_lost_has_no_rtt() -> None:
    result = parse((DATA / "linux-unreachable-100-loss-constructed.txt").read_text(encoding="utf-8"))
    assert (result.transmitted, result.received, result.errors, result.loss_percent) == (3, 0, 3, 100.0)
    assert result.rtt_avg_ms is None and result.replies == ()


def test_errors_and_garbage() -> None:
    with pytest.raises(ToolReportedError, match="ping: ping: nosuchhost: Name or service not known"):
        parse("ping: nosuchhost: Name or service not known\n")
    with pytest.raises(UnrecognizedOutput, match="ping: no 'N packets transmitted"):
        parse("PING x (1.2.3.4) 56(84) bytes of data.\n64 bytes from 1.2.3.4: icmp_seq=1 ttl=64 time=0.1 ms\n")
    busybox = "3 packets transmitted, 3 packets received, 0% packet loss\nround-trip min/avg/max = 0.1/0.2/0.3 ms\n"
    assert parse(busybox).rtt_avg_ms == 0.2
