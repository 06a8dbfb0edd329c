"""Node text reaches the terminal, the logs and JUnit with its control characters escaped."""

from __future__ import annotations

from pytest_fabric.report.safetext import safe_text, text_lines


def test_plain_text_newlines_and_tabs_pass_unchanged() -> None:
    text = "gpu0\tH100 80GB\nnode01: ok — 191 Gb/s ✓\n"
    assert safe_text(text) is text


def test_terminal_controls_are_shown_escaped() -> None:
    hostile = ("\x1b[2J\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07"
               "\x1b]52;c;ZWNobyBvd25lZA==\x07\x00\x07\rACCEPT: all good\x9b31m\x7f\x0b\x0c")
    safe = safe_text(hostile)
    assert safe == ("\\x1b[2J\\x1b]8;;https://evil.example/\\x07click\\x1b]8;;\\x07"
                    "\\x1b]52;c;ZWNobyBvd25lZA==\\x07\\x00\\x07\\rACCEPT: all good\\x9b31m\\x7f\\v\\f")
    assert not any(ord(c) < 32 and c not in "\n\t" or 0x7f <= ord(c) <= 0x9f for c in safe)


def test_lone_surrogates_are_escaped() -> None:
    assert safe_text("a\udcffb") == "a\\udcffb"


def test_line_separators_and_bidi_controls_are_escaped() -> None:
    # U+2028 breaks a line for splitlines(); U+202E reorders what the reader sees.
    assert safe_text("a\u2028ACCEPT") == "a\\u2028ACCEPT"
    assert safe_text("x\u202eTPECCA") == "x\\u202eTPECCA"
    assert safe_text("\u2066y\u2069") == "\\u2066y\\u2069"


def test_node_text_is_cut_only_at_newlines() -> None:
    # splitlines() made "\rACCEPT: 8 nodes conform" a line of its own, starting with the fake verdict.
    hostile = "tool failed\x07\rACCEPT: 8 nodes conform\x1cX\x85Y\u2028Z\n"
    lines = text_lines(hostile)
    assert lines == ["tool failed\x07\rACCEPT: 8 nodes conform\x1cX\x85Y\u2028Z"]
    assert not any(safe_text(line).startswith("ACCEPT") for line in lines)
    assert text_lines("a\nb") == ["a", "b"] and text_lines("") == []
