"""iperf3 parser (JSON and text) on every recorded iperf3 output and on real 3.12 captures."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_fabric.parsers.base import ParseError, ToolReportedError, UnrecognizedOutput
from pytest_fabric.parsers.iperf3 import (
    CLIENT_TO_SERVER,
    SERVER_TO_CLIENT,
    parse,
    parse_json,
    parse_text,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "iperf3"


def _read(folder: Path, name: str) -> str:
    return (folder / name).read_text(encoding="utf-8")


# file -> (format, version, streams, sent_bps, received_bps, retransmits, remote host)
EXPECTED = {
    "json-client-1stream-wan-gcp-to-ibm-3.9.json": (
        "json",
        "3.9",
        1,
        46137062.56391836,
        46234426.36738679,
        1033,
        "168.1.194.92",
    ),
    "json-client-P8-host-to-host-40g-3.0.11.json": (
        "json",
        "3.0.11",
        8,
        37659900000.0,
        37734000000.0,
        90,
        "10.0.0.2",
    ),
    "text-client-1stream-loopback-i1.txt": ("text", None, 1, 25.0e9, 24.9e9, 0, "127.0.0.1"),
    "text-client-P4-t30-multithreaded-3.16plus.txt": (
        "text",
        None,
        4,
        91.8e9,
        91.8e9,
        0,
        "192.168.100.1",
    ),
}
ERRORS = {"json-interrupted-error-3.6.json": "interrupt - the client has terminated"}


def test_every_iperf3_corpus_file_has_expectations(corpus: Path) -> None:
    assert {p.name for p in (corpus / "iperf3").iterdir()} == set(EXPECTED) | set(ERRORS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_totals(corpus: Path, name: str) -> None:
    fmt, version, streams, sent, received, retransmits, remote = EXPECTED[name]
    result = parse(_read(corpus / "iperf3", name))
    assert (result.format, result.version, result.num_streams, result.protocol) == (
        fmt,
        version,
        streams,
        "TCP",
    )
    assert result.sent_bps == pytest.approx(sent)
    assert result.received_bps == pytest.approx(received)
    assert (result.retransmits, result.remote_host) == (retransmits, remote)
    assert len(result.streams) == streams


def test_json_3011_per_stream_and_cpu(corpus: Path) -> None:
    result = parse_json(_read(corpus / "iperf3", "json-client-P8-host-to-host-40g-3.0.11.json"))
    first = result.streams[0]
    assert (first.stream_id, first.sent_bps, first.received_bps, first.retransmits) == (
        4,
        11354700000.0,
        11373000000.0,
        90,
    )
    assert [s.stream_id for s in result.streams] == [4, 6, 8, 10, 12, 14, 16, 18]
    assert result.sent_bytes == 70612418560 and result.received_bytes == 70751514248
    assert (result.cpu_host_total_percent, result.cpu_remote_total_percent) == (43.5095, 85.9807)
    assert result.duration_s == 15 and result.reverse is False
    assert len(result.intervals) == 15  # 20 printed, the 5 -O omitted seconds are not measurements


def test_json_39_wan_omits_warmup(corpus: Path) -> None:
    result = parse_json(_read(corpus / "iperf3", "json-client-1stream-wan-gcp-to-ibm-3.9.json"))
    assert len(result.intervals) == 10
    assert result.intervals[0].start_s == pytest.approx(6.1e-05)


def test_json_error_even_with_intervals(corpus: Path) -> None:
    text = _read(corpus / "iperf3", "json-interrupted-error-3.6.json")
    assert text.startswith("^C")  # the capture's own terminal noise before the document
    with pytest.raises(ToolReportedError, match="iperf3: .*interrupt - the client has terminated"):
        parse(text)


def test_text_multithreaded_316_uses_summary_not_intervals(corpus: Path) -> None:
    result = parse_text(_read(corpus / "iperf3", "text-client-P4-t30-multithreaded-3.16plus.txt"))
    assert [s.stream_id for s in result.streams] == [5, 7, 9, 11]
    assert [s.sent_bps for s in result.streams] == [22.6e9, 23.0e9, 22.9e9, 23.2e9]
    assert result.sent_bytes == 320 * 2**30 and result.duration_s == 30.0
    # Only [SUM] intervals, with the SUM's own boundaries (streams' are 1.30-2.03 etc.).
    assert len(result.intervals) == 30
    assert (result.intervals[1].start_s, result.intervals[1].end_s, result.intervals[1].bps) == (
        1.0,
        2.0,
        57.3e9,
    )


def test_text_single_stream_cwnd_columns(corpus: Path) -> None:
    result = parse_text(_read(corpus / "iperf3", "text-client-1stream-loopback-i1.txt"))
    assert [i.bps for i in result.intervals][:3] == [27.2e9, 35.8e9, 20.6e9]
    assert result.streams[0].received_bytes == round(29.1 * 2**30)


def test_captured_312_json_p4() -> None:
    result = parse(_read(DATA, "json-client-P4-loopback-3.12.json"))
    assert (result.version, result.num_streams, result.remote_host) == ("3.12", 4, "127.0.0.1")
    assert result.sent_bps == pytest.approx(21014407829.338642)
    assert result.received_bps == pytest.approx(21001609045.06257)
    assert result.retransmits == 4
    assert sum(s.sent_bps or 0 for s in result.streams) == pytest.approx(result.sent_bps, rel=1e-3)


def test_captured_312_text_p4() -> None:
    result = parse(_read(DATA, "text-client-P4-t2-loopback-3.12.txt"))
    assert (result.format, result.num_streams, result.sent_bps, result.retransmits) == (
        "text",
        4,
        12.8e9,
        5,
    )
    assert result.duration_s == 2.0


def test_captured_312_udp() -> None:
    result = parse(_read(DATA, "json-client-udp-100M-loopback-3.12.json"))
    assert result.protocol == "UDP"
    assert result.sent_bps == pytest.approx(100129896.17944767)
    assert result.received_bps == pytest.approx(100103971.60993652)
    assert result.lost_percent == 0 and result.jitter_ms == pytest.approx(0.014140286061741158)


@pytest.mark.parametrize(
    "name", ["json-error-connection-refused-3.12.json", "text-error-connection-refused-3.12.txt"]
)
def test_captured_connection_refused(name: str) -> None:
    with pytest.raises(ToolReportedError, match="unable to connect to server: Connection refused"):
        parse(_read(DATA, name))


@pytest.mark.parametrize(
    "text", ["", "{", "[1, 2]", '{"start": {}}', "hello\nworld", "Connecting to host x, port 1\n"]
)
def test_garbage_is_unrecognized(text: str) -> None:
    with pytest.raises(UnrecognizedOutput, match="^iperf3"):
        parse(text)


def test_json_wrong_types_are_parse_errors() -> None:
    with pytest.raises(ParseError, match="iperf3: start: expected an object, got list"):
        parse_json('{"start": [], "end": 3}')
    with pytest.raises(
        ParseError, match="iperf3: end sent bits_per_second: expected a number, got 'fast'"
    ):
        parse_json('{"end": {"sum_sent": {"bits_per_second": "fast"}}}')


def test_udp_receiver_side_as_iperf3_writes_it() -> None:
    # Captured with real loss: the receiver got fewer bytes than were sent, and says so in sum_received.
    result = parse(_read(DATA, "json-client-udp-unlimited-lossy-loopback-3.12.json"))
    assert (result.sent_bytes, result.received_bytes) == (411964000, 408255400)
    assert result.received_bps == pytest.approx(3265716628.3371663)
    assert (result.lost_packets, result.packets) == (2649, 294260)
    assert result.lost_percent == pytest.approx(0.9002242914429416)
    assert (result.duration_s, result.received_duration_s) == (1.000042, 1.0001)


def test_udp_before_311_has_no_receiver_totals() -> None:
    # iperf3 < 3.11 wrote only end.sum: the sender's bytes and rate with the receiver's loss.
    # Its receiver rate and bytes are not known; they are not the sender's.
    result = parse(_read(DATA, "json-client-udp-lossy-pre-3.11-layout-constructed.json"))
    assert (result.version, result.protocol) == ("3.9", "UDP")
    assert (result.sent_bytes, result.sent_bps) == (411964000, pytest.approx(3295573585.9093914))
    assert (result.received_bps, result.received_bytes, result.received_duration_s) == (
        None,
        None,
        None,
    )
    assert (result.lost_packets, result.packets) == (2649, 294260)
    assert result.lost_percent == pytest.approx(0.9002242914429416)
    assert result.duration_s == 1.0001
    assert result.streams[0].received_bps is None and result.streams[0].sent_bytes == 411964000


def test_duration_is_what_the_run_took_not_the_requested_seconds() -> None:
    # `-n 20M` asks for bytes, not seconds: test_start.duration is 0, the run took 0.42 s.
    result = parse(_read(DATA, "json-client-udp-n20M-loopback-3.12.json"))
    assert (result.duration_s, result.received_duration_s) == (0.420203, 0.420251)
    assert result.received_bytes == 20972000


def test_udp_text_receiver_line() -> None:
    result = parse(_read(DATA, "text-client-udp-unlimited-lossy-loopback-3.12.txt"))
    assert result.protocol == "UDP"
    assert (result.sent_bps, result.received_bps) == (2.47e9, 1.29e9)
    assert result.received_bytes == 154 * 2**20 and result.sent_bytes == 295 * 2**20
    assert (result.lost_packets, result.packets, result.lost_percent) == (105168, 220650, 48.0)
    assert result.received_duration_s == 1.0


def test_udp_text_without_receiver_line_does_not_copy_the_sender() -> None:
    text = _read(DATA, "text-client-udp-unlimited-lossy-loopback-3.12.txt")
    cut = "\n".join(line for line in text.splitlines() if not line.rstrip().endswith("receiver"))
    result = parse(cut)
    assert result.sent_bps == 2.47e9
    assert (result.received_bps, result.received_bytes, result.lost_packets) == (None, None, None)


# --- iperf3 3.16+ (issue 20): recorded with iperf3 3.16 and 3.21 on loopback -------------------


def test_bidir_text_keeps_each_direction_on_its_own_figure() -> None:
    result = parse(_read(DATA, "text-client-P4-bidir-loopback-3.21.txt"))
    assert (result.format, result.side, result.bidir, result.reverse) == (
        "text",
        "client",
        True,
        False,
    )
    # The top-level figures are [SUM][TX-C]: the client's sending, as iperf3's sum_sent names it.
    assert (result.direction, result.sent_bps, result.received_bps) == (
        CLIENT_TO_SERVER,
        21.4e9,
        21.4e9,
    )
    assert (result.retransmits, result.num_streams) == (16, 4)
    assert [s.stream_id for s in result.streams] == [5, 7, 9, 12]
    reverse = result.bidir_reverse
    assert reverse is not None
    assert (reverse.direction, reverse.sent_bps, reverse.received_bps) == (
        SERVER_TO_CLIENT,
        22.2e9,
        22.1e9,
    )
    assert (reverse.retransmits, [s.stream_id for s in reverse.streams]) == (15, [14, 16, 18, 20])
    assert [f.direction for f in result.flows] == [CLIENT_TO_SERVER, SERVER_TO_CLIENT]
    # Only [SUM][TX-C] intervals, never the two directions' figures added.
    assert [i.bps for i in result.intervals] == [19.3e9, 23.6e9]
    assert result.skipped == ()


def test_bidir_text_316_and_server_side_tags() -> None:
    old = parse(_read(DATA, "text-client-P4-bidir-loopback-3.16.txt"))
    assert old.bidir and old.received_bps == 17.3e9 and old.bidir_reverse is not None
    assert old.bidir_reverse.received_bps == 18.5e9
    server = parse(_read(DATA, "text-server-P4-bidir-loopback-3.21.txt"))
    # [RX-S] is what the server received from the client; [TX-S] what it sent back.
    assert (server.side, server.direction, server.received_bps) == (
        "server",
        CLIENT_TO_SERVER,
        21.4e9,
    )
    assert server.bidir_reverse is not None and server.bidir_reverse.sent_bps == 22.2e9
    assert [s.stream_id for s in server.streams] == [5, 8, 11, 13]


@pytest.mark.parametrize(
    "name",
    ["json-client-P2-bidir-loopback-3.21.json", "json-client-1stream-bidir-loopback-3.16.json"],
)
def test_bidir_json_sums_and_streams_by_direction(name: str) -> None:
    result = parse(_read(DATA, name))
    assert result.bidir and result.direction == CLIENT_TO_SERVER and result.side == "client"
    assert result.bidir_reverse is not None and result.bidir_reverse.direction == SERVER_TO_CLIENT
    assert len(result.streams) == len(result.bidir_reverse.streams) == result.num_streams
    assert not {s.stream_id for s in result.streams} & {
        s.stream_id for s in result.bidir_reverse.streams
    }


def test_bidir_json_321_figures() -> None:
    result = parse(_read(DATA, "json-client-P2-bidir-loopback-3.21.json"))
    assert result.received_bps == pytest.approx(17483467091.8149)  # end.sum_received
    assert result.retransmits == 15
    reverse = result.bidir_reverse
    assert reverse is not None
    assert reverse.received_bps == pytest.approx(
        15146981308.206594
    )  # end.sum_received_bidir_reverse
    assert (reverse.sent_bytes, reverse.retransmits) == (1912078336, 18)
    assert [s.stream_id for s in result.streams] == [5, 7] and [
        s.stream_id for s in reverse.streams
    ] == [9, 12]


@pytest.mark.parametrize(
    "name", ["text-client-P2-R-loopback-3.21.txt", "json-client-P2-R-loopback-3.21.json"]
)
def test_reverse_mode_says_the_server_sent(name: str) -> None:
    result = parse(_read(DATA, name))
    assert (result.direction, result.reverse, result.bidir, result.bidir_reverse) == (
        SERVER_TO_CLIENT,
        True,
        False,
        None,
    )
    assert result.num_streams == 2 and result.received_bps is not None


def test_server_side_receiver_lines_321() -> None:
    server = parse(_read(DATA, "text-server-P4-t2-loopback-3.21.txt"))
    assert (server.side, server.remote_host, server.direction) == (
        "server",
        "127.0.0.1",
        CLIENT_TO_SERVER,
    )
    assert (server.received_bps, server.num_streams) == (37.4e9, 4)
    reverse = parse(_read(DATA, "text-server-P2-R-loopback-3.21.txt"))
    assert (reverse.direction, reverse.sent_bps) == (
        SERVER_TO_CLIENT,
        pytest.approx(33.2e9),
    )  # only sender lines


def test_multithreaded_321_text_and_json_sums() -> None:
    text = parse(_read(DATA, "text-client-P4-t2-loopback-3.21.txt"))
    assert (text.sent_bps, text.received_bps, text.retransmits, text.num_streams) == (
        37.4e9,
        37.4e9,
        83,
        4,
    )
    assert [(i.start_s, i.end_s, i.bps) for i in text.intervals] == [
        (0.0, 1.0, 37.1e9),
        (1.0, 2.0, 37.7e9),
    ]
    document = parse(_read(DATA, "json-client-P4-loopback-3.21.json"))
    assert (document.version, document.num_streams, document.bidir) == ("3.21", 4, False)
    assert sum(s.received_bps or 0 for s in document.streams) == pytest.approx(
        document.received_bps, rel=1e-3
    )


def test_warnings_interleaved_are_kept_not_fatal() -> None:
    udp = parse(_read(DATA, "text-client-udp-P2-block-size-warnings-loopback-3.21.txt"))
    assert udp.protocol == "UDP" and udp.received_bps == 20.1e6 and udp.lost_packets == 0
    assert udp.warnings[0] == "warning: Block size 8000 > sending socket buffer size 4608"
    assert len(udp.warnings) == 4 and udp.skipped == ()
    document = parse(_read(DATA, "json-client-f-ignored-warning-loopback-3.21.json"))
    assert document.format == "json"
    assert document.warnings == ("warning: Report format (-f) flag ignored with JSON output (-J)",)


def test_json_stream_lines_read_as_the_report() -> None:
    stream = parse(_read(DATA, "json-stream-client-P2-loopback-3.21.jsonl"))
    assert (stream.format, stream.version, stream.num_streams) == ("json", "3.21", 2)
    assert stream.received_bps == pytest.approx(35110983328.67357)
    assert len(stream.intervals) == 1


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("text-client-P2-server-killed-3.21.txt", "error - control socket has closed unexpectedly"),
        ("json-client-P2-server-killed-3.21.json", "control socket has closed unexpectedly"),
        ("json-stream-client-server-killed-3.21.jsonl", "control socket has closed unexpectedly"),
        ("text-client-P2-interrupted-sigint-3.21.txt", "interrupt - the client has terminated"),
        ("text-server-P2-client-interrupted-3.21.txt", "the client has terminated"),
    ],
)
def test_failed_runs_trailing_lines_are_the_tools_failure(name: str, words: str) -> None:
    with pytest.raises(ToolReportedError, match=words):
        parse(_read(DATA, name))


def test_interrupted_client_stdout_alone_is_a_run_cut_short() -> None:
    # iperf3 3.21 exits 0 on SIGINT; its stderr line aside, stdout shows 0.00 Bytes received.
    text = _read(DATA, "text-client-P2-interrupted-sigint-3.21.txt")
    stdout = "\n".join(line for line in text.splitlines() if not line.startswith("iperf3:"))
    with pytest.raises(UnrecognizedOutput, match="receiver's summary reports 0 bytes .* cut short"):
        parse(stdout)


def test_unknown_lines_are_skipped_and_the_rest_read() -> None:
    text = _read(DATA, "text-client-P4-t2-loopback-3.21.txt")
    lines = text.splitlines()
    noisy = "\n".join(
        [lines[0], "srun: Job step created", *lines[1:8], "a line from a newer iperf3", *lines[8:]]
    )
    result = parse(noisy)
    assert result.sent_bps == 37.4e9
    assert result.skipped == ("srun: Job step created", "a line from a newer iperf3")
    assert result.skipped_count == 2
