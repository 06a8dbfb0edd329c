"""Every recorded output in shared/corpus is claimed by a registered parser and parses.

A parser claims folders (or single files) of the corpus through
``register(..., corpus=(...))``.  A file passes when one of the parsers that
claim it reads it; the known captures of a tool failing must instead raise
ToolReportedError.  Until every parser set has landed, the folders nobody
claims fail here by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from unit.parsers.corpus import UNREAD

from pytest_fabric.parsers.base import ParseError, Parser, ToolReportedError, registry

# Captures of the tool itself failing: parsing them must say so, not return a result.
KNOWN_TOOL_ERRORS = {
    "ibstat/a100-cx6-hdr-200g-ibpanic-missing-device.txt",
    "perftest/ib_write_bw-error-couldnt-connect-pre-fix.txt",
    "iperf3/json-interrupted-error-3.6.json",
}
# "all links are inactive" is not a failed run of nvidia-smi but a finding about
# one GPU: the parser returns that GPU flagged (all_links_inactive) so the
# NVLink check can fail it while still reading the other GPUs.


def claimants(relative: str) -> list[Parser]:
    """The parsers whose ``corpus=`` entries name this file or a folder above it."""
    found = []
    for parser in registry().values():
        for entry in parser.corpus_dirs:
            entry = entry.strip("/")
            if relative == entry or relative.startswith(entry + "/"):
                found.append(parser)
                break
    return found


def test_every_corpus_folder_is_claimed(corpus: Path) -> None:
    folders = sorted(p.name for p in corpus.iterdir() if p.is_dir() and p.name not in UNREAD)
    unclaimed = [f for f in folders if not any(claimants(p.relative_to(corpus).as_posix())
                                              for p in (corpus / f).iterdir() if p.is_file())]
    assert not unclaimed, (
        f"no registered parser claims these corpus folders yet: {', '.join(unclaimed)} "
        "(register the parser with corpus=('<folder>',))"
    )


def test_the_unread_folders_are_read_by_no_parser(corpus: Path) -> None:
    read = sorted(f for f in UNREAD if (corpus / f).is_dir() and any(
        claimants(p.relative_to(corpus).as_posix()) for p in (corpus / f).iterdir() if p.is_file()))
    assert not read, f"a parser reads these now: take them out of UNREAD (tests/unit/parsers/corpus.py): {read}"


def test_corpus_file_parses(corpus_file: Path, corpus: Path) -> None:
    relative = corpus_file.relative_to(corpus).as_posix()
    parsers = claimants(relative)
    if not parsers:
        pytest.fail(f"no registered parser claims {relative} (folder {relative.split('/')[0]!r} has no parser yet)")
    text = corpus_file.read_text(encoding="utf-8", errors="replace")
    failures: list[str] = []
    for parser in parsers:
        try:
            result = parser.function(text)
        except ToolReportedError as exc:
            if relative in KNOWN_TOOL_ERRORS:
                assert parser.tool in str(exc)
                return
            failures.append(f"{parser.tool}: ToolReportedError {exc}")
        except ParseError as exc:
            failures.append(f"{parser.tool}: {type(exc).__name__} {exc}")
        else:
            if relative in KNOWN_TOOL_ERRORS:
                failures.append(f"{parser.tool}: parsed a capture of the tool failing without ToolReportedError")
                continue
            assert result is not None
            return
    pytest.fail(f"{relative}: no claiming parser read it:\n  " + "\n  ".join(failures))
