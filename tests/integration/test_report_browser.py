"""The HTML report as a browser renders it: headless Chromium, DOM after pytest-html's JavaScript ran.

Skipped when no Chromium is installed.  Set ``FABRIC_REPORT_SHOTS=DIR`` to keep
the screenshots for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pytest_fabric.report.testing import sample_cluster, write_fake_project

PLUGINS = ["evidence", "compare", "collect", "record_json", "terminal", "html", "junit"]
CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), shutil.which("google-chrome"))
                 if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium)")


def _chromium(profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", f"--user-data-dir={profile}"]
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-contained report of 12 nodes, one slow and one down, made by a real pytest run."""
    d = tmp_path_factory.mktemp("browser")
    info, checks = sample_cluster(12, slow="node05", down="node09")
    write_fake_project(d, info, checks)
    args = [arg for m in PLUGINS for arg in ("-p", f"pytest_fabric.report.{m}")]
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "--html=report.html",
                    "--self-contained-html"], cwd=d, capture_output=True, check=False, timeout=300)
    assert (d / "report.html").exists()
    return d / "report.html"


class _Dom(HTMLParser):
    """Just enough of the DOM: elements with their classes and attributes, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, cls: str) -> list[dict[str, str]]:
        return [a for _, a in self.elements if cls in a.get("class", "").split()]


def test_rendered_dom_has_verdict_heatmap_and_failing_cells(report: Path, tmp_path: Path) -> None:
    run = _chromium(tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", report.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    dom = _Dom()
    dom.feed(run.stdout)
    text = " ".join(dom.text)
    verdict = dom.with_class("fabric-verdict")
    assert verdict and "reject" in verdict[0]["class"] and "REJECT" in text
    assert sum(1 for tag, _ in dom.elements if tag == "svg") >= 3  # tcp, latency, NVLink matrices
    failed = dom.with_class("fabric-cell-failed")
    assert len(failed) == 2 * 10  # node05 with its 10 reachable peers, both sides of the diagonal
    assert len(dom.with_class("fabric-cell-error")) == 2 * 11  # node09 tcp pairs (not measured)
    # pytest-html's script ran and built the results table rows with our columns.
    assert dom.with_class("col-measured") and dom.with_class("col-margin")
    assert "node05<->node06" in text and "-33.1%" in text


def test_screenshot(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    run = _chromium(tmp_path / "profile", "--window-size=1400,2400", "--virtual-time-budget=5000",
                    f"--screenshot={shot}", report.as_uri())
    assert run.returncode == 0 and shot.stat().st_size > 50_000, run.stderr[-2000:]
    keep = os.environ.get("FABRIC_REPORT_SHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / "report.png")
        shutil.copy(report, Path(keep) / "report.html")


def test_verdict_comes_first_and_counts_every_check(report: Path, tmp_path: Path) -> None:
    """Where the browser lays things out: the verdict above pytest-html's Environment box, and the
    banner's own count line instead of pytest-html's "N tests took" (which leaves out errors and skips)."""
    probe = tmp_path / "probe.html"
    # A script of the test's own, appended to a copy: it writes what the layout gave into the DOM.
    script = """<script>window.addEventListener('load', () => setTimeout(() => {
      const top = s => { const e = document.querySelector(s); return e ? Math.round(e.getBoundingClientRect().top) : -1; };
      const shown = s => { const e = document.querySelector(s); return e ? getComputedStyle(e).display !== 'none' : false; };
      const out = document.createElement('pre'); out.id = 'layout-probe';
      out.textContent = JSON.stringify({verdict: top('#fabric-verdict'), environment: top('#environment-header'),
        results: top('#results-table'), runCount: shown('p.run-count'), took: document.querySelector('#fabric-took')?.textContent});
      document.body.appendChild(out); }, 500));</script>"""
    probe.write_text(report.read_text().replace("</body>", script + "</body>"))
    run = _chromium(tmp_path / "profile", "--virtual-time-budget=5000", "--dump-dom", probe.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    import json
    import re

    found = re.search(r'<pre id="layout-probe">(.*?)</pre>', run.stdout)
    assert found, "the probe script did not run"
    layout = json.loads(found.group(1).replace("&quot;", '"'))
    assert 0 <= layout["verdict"] < layout["environment"] < layout["results"], layout
    assert layout["runCount"] is False
    checks = len(json.loads((report.parent / "fake_records.json").read_text()))
    assert layout["took"].startswith(f"{checks} checks in "), layout
