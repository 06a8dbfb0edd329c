"""A check that could not measure reads as its message in the terminal, JUnit and the HTML page.

The simulated nodes have no ``ibstat``: the RDMA port checks of ``roce-small`` error on every node
(the real transport, the real ``command not found``).  Each error must show the transport's text
(node, command, fix), grouped by cause, and no Python traceback unless ``--tb=long`` asks for it.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from simcluster import SimCluster

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
                 if p), None)
# What pytest prints of a fixture chain; none of it may reach a person reading an error.
TRACEBACK_MARKS = ("NodeHandle(", "request = <SubRequest", "def link_layer", "Traceback", "raise ToolMissing")


def _run(pytester: pytest.Pytester, inventory: Path, *extra: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", "roce-small", "-p", "no:cacheprovider", "-k", "link_layer",
        *extra, timeout=300,
    )


def test_errors_show_their_message_not_a_traceback(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest's short summary shows a test's path relative to the working directory and drops the message
    # when the line would not fit: the installed suite is far from pytester's directory, so a wide terminal.
    monkeypatch.setenv("COLUMNS", "400")
    result = _run(pytester, sim_inventory, "--junitxml=junit.xml", "--evidence-dir=evidence",
                  "--conformance-json=record.json")
    n = len(simcluster.nodes)
    assert result.parseoutcomes()["errors"] == n
    out = result.stdout.str()
    for mark in TRACEBACK_MARKS:
        assert mark not in out, mark
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_link_layer[[]node01]*",
        "node node01: ibstat: command not found",
        "command: ibstat",
        "fix: install infiniband-diags on node01",
        "(the Python traceback: run again with --tb=long)",
    ])
    # The other nodes' errors of that cause point back to the first in one line each.
    result.stdout.fnmatch_lines(["*ERROR at setup of test_link_layer[[]node02]*",
                                 "node node02: ibstat: command not found  (as for test_link_layer[[]node01] above)",
                                 "*ERROR at setup of test_link_layer[[]node03]*"])
    # The short summary names the cause, and the fabric summary says it once for all nodes.
    result.stdout.fnmatch_lines(["ERROR *test_link_layer[[]node02] - node node02: ibs*"])
    result.stdout.fnmatch_lines([
        f"  ERROR  link_layer on node[[]01-0{n}] ({n} checks): node node[[]01-0{n}]: ibstat: command not found",
        "         command: ibstat",
        f"         fix: install infiniband-diags on node[[]01-0{n}]",
    ])

    errors = ET.parse(pytester.path / "junit.xml").getroot().findall(".//testcase/error")
    assert len(errors) == n
    for error in errors:
        text = (error.text or "") + error.get("message", "")
        assert "ibstat: command not found" in text and "fix: install infiniband-diags" in (error.text or "")
        for mark in TRACEBACK_MARKS:
            assert mark not in text, mark

    # The traceback is kept in the evidence directory, named from the record.
    import json

    record = json.loads((pytester.path / "record.json").read_text())
    errored = [c for c in record["checks"] if c["outcome"] == "error"]
    assert errored and all(c.get("traceback_file") for c in errored)
    kept = (pytester.path / errored[0]["traceback_file"]).read_text()
    assert "raise ToolMissing" in kept


def test_tb_long_keeps_pythons_traceback(pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path) -> None:
    result = _run(pytester, sim_inventory, "--tb=long")
    out = result.stdout.str()
    assert "raise ToolMissing" in out and "request = <SubRequest" in out


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)")
def test_rendered_page_shows_the_message(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path, tmp_path: Path
) -> None:
    _run(pytester, sim_inventory, "--html=report.html", "--self-contained-html")
    page = pytester.path / "report.html"
    assert CHROMIUM is not None
    # Every row's details open, so pytest-html's log of an errored test is in the DOM as it renders it.
    run = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
         page.as_uri() + "?visible=error"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = _Text()
    dom.feed(run.stdout)
    text = " ".join(dom.parts)
    assert "ibstat: command not found" in text and "fix: install infiniband-diags on node01" in text
    for mark in TRACEBACK_MARKS:
        assert mark not in text, mark
