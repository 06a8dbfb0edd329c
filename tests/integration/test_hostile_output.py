"""What a node prints can neither exhaust the controller nor drive the reader's terminal.

A node's ``nvidia-smi`` is replaced by a stand-in (the real transport, the real sshd): one that
prints 500 MB on one line, one that prints terminal control sequences.  The run must stay small
(controller memory, record, HTML page, terminal output) and print the controls only escaped.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from simcluster import SimCluster

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-gpu.yaml"
MB = 1_000_000
FLOOD_BYTES = 500 * MB
# The goals of issue 27: any output size, the controller under 500 MB, report and record under 20 MB.
RSS_GOAL = 500 * MB
FILE_GOAL = 20 * MB

# Peak RSS of the pytest run alone: this wrapper's only child is the run.
_MEASURED = (
    "import resource, subprocess, sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    rc = subprocess.run(sys.argv[2:], stdout=out, stderr=subprocess.STDOUT).returncode\n"
    "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
)


def _run(where: Path, inventory: Path, node: str, *extra: str, ci: bool = False) -> tuple[int, int, Path]:
    """The gpu_count check of ``node`` as a user runs it: its exit code, its peak RSS and its terminal output.

    ``ci``: as on a CI runner (``CI`` set), where pytest's short summary prints a failure's whole
    message, not its first line cut to the terminal's width.
    """
    terminal = where / "terminal.txt"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    if ci:
        env["CI"] = "true"
    measured = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(terminal), sys.executable, "-m", "pytest", "--cluster", str(inventory),
         "--profile", str(PROFILE), "-p", "no:cacheprovider", "-rA", "-k", f"gpu_count and {node}",
         "--conformance-json=record.json", "--junitxml=junit.xml", "--html=report.html", "--self-contained-html",
         *extra],
        cwd=where, capture_output=True, text=True, timeout=600, check=True, env=env,
    )
    rc, rss = measured.stdout.split()
    return int(rc), int(rss), terminal


# Exit 1 with the flood on stderr: the error quotes its "last output".  Exit 0 with it on stdout:
# the parsers read it (-q -x, then -q).
FLOODS = {"exit1-stderr": (1, ">&2"), "exit0-stdout": (0, "")}


def test_a_node_that_prints_500_mb_on_one_line_does_not_exhaust_the_controller(
    tmp_path: Path, simcluster: SimCluster
) -> None:
    # Both floods at once, each from a node of its own in a run of its own (a run locks its nodes),
    # its peak RSS its own wrapper's: a flood is one pipe's CPU (head, tr, sshd, the controller's
    # reads), so two take little more than one where a second core is free.
    runs = dict(zip(FLOODS, simcluster.nodes))
    try:
        for name, node in runs.items():
            exit_code, stream = FLOODS[name]
            flood = f"head -c {FLOOD_BYTES} /dev/zero | tr '\\0' x {stream}\nexit {exit_code}\n"
            simcluster.install_tool(node, "nvidia-smi", flood)
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:
            done = {}
            for name, node in runs.items():
                (tmp_path / name).mkdir()
                inventory = simcluster.write_inventory(tmp_path / name / "inventory.yaml", nodes=[node.name])
                done[name] = pool.submit(_run, tmp_path / name, inventory, node.name, "--evidence-dir=evidence")
            measured = {name: future.result() for name, future in done.items()}
    finally:
        for node in runs.values():
            simcluster.remove_tool(node, "nvidia-smi")
    for name, (rc, rss, terminal) in measured.items():
        where = tmp_path / name
        sizes = {file: (where / file).stat().st_size for file in ("record.json", "report.html", "junit.xml")}
        sizes["terminal"] = terminal.stat().st_size
        print(f"flood {name}: peak RSS {rss / MB:.0f} MB, " + ", ".join(f"{k} {v / MB:.2f} MB" for k, v in sizes.items()))
        assert rc == 1, name  # the check errors: it could not read its tool's output
        assert rss < RSS_GOAL, f"{name}: controller peak RSS {rss / MB:.0f} MB"
        for file, size in sizes.items():
            assert size < FILE_GOAL, f"{name}: {file}: {size / MB:.1f} MB"
        record = json.loads((where / "record.json").read_text())
        (check,) = [c for c in record["checks"] if c["check"] == "gpu_count"]
        assert check["outcome"] == "error", name
        if FLOODS[name][0]:  # the error quotes the output's tail, cut
            assert "characters dropped by pytest-fabric" in check["message"], check["message"][:3000]


# Each a way a node's text could drive the reader's terminal: clear the screen, plant a link,
# write the clipboard, NUL, ring, and a carriage return that prints a fake verdict over a line.
HOSTILE = (
    "\x1b[2J\x1b[H"
    "\x1b]8;;https://evil.example/\x07click here\x1b]8;;\x07 "
    "\x1b]52;c;cm0gLXJmIH4=\x07"
    "NUL\x00BEL\x07"
    "\rACCEPT: 8 nodes conform\x9b2J"
    "<img src=x onerror=alert(1)>"
)
RAW = ("\x1b", "\x00", "\x07", "\r", "\x9b")


def test_a_node_cannot_send_escape_sequences_to_the_terminal_or_junit(
    tmp_path: Path, simcluster: SimCluster
) -> None:
    script = "printf '" + "".join(f"\\{b:03o}" for b in HOSTILE.encode()) + "' >&2\nexit 3\n"
    # The three runs at once, each on a node of its own (a run locks its nodes) and in a directory of
    # its own: a run is mostly its start-up and the node's answers, so together they take little more
    # than the slowest of them.
    runs = {node.name: tb_ci for node, tb_ci in zip(
        simcluster.nodes, (("--tb=short", False), ("--tb=long", False), ("--tb=short", True)))}
    try:
        for node in runs:
            simcluster.install_tool(node, "nvidia-smi", script)
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:
            done = {}
            for node, (tb, ci) in runs.items():
                inventory = simcluster.write_inventory(tmp_path / node / "inventory.yaml", nodes=[node])
                done[node] = pool.submit(_run, tmp_path / node, inventory, node, tb, ci=ci)
            outs = []
            for node, future in done.items():
                rc, _, terminal = future.result()
                assert rc == 1, runs[node]
                outs.append(terminal.read_text(errors="surrogateescape"))
    finally:
        for node in runs:
            simcluster.remove_tool(node, "nvidia-smi")
    for out in outs:
        assert "click here" in out and "ACCEPT: 8 nodes conform" in out, out[-3000:]
        for raw in RAW:
            assert raw not in out, (raw, out[-3000:])
        assert "\\x1b[2J" in out and "\\x1b]52;c;" in out and "\\x00" in out and "\\x07" in out
        assert "\\rACCEPT: 8 nodes conform" in out and "\\x9b2J" in out
        # no line starts with the node's fake verdict
        planted = [i for i, line in enumerate(out.splitlines()) if line.startswith("ACCEPT: 8 nodes")]
        assert not planted, [out.splitlines()[i - 1 : i + 1] for i in planted]
    for where in (tmp_path / node for node in runs):  # each run's JUnit, page and record
        junit = (where / "junit.xml").read_bytes().decode()
        for raw in RAW:
            assert raw not in junit, raw
        errors = ET.parse(where / "junit.xml").getroot().findall(".//testcase/error")
        assert errors and "\\x1b]8;;https://evil.example/" in (errors[0].text or "") + errors[0].get("message", "")
        # HTML and JSON escape for themselves: the page holds no raw control, the record the exact text.
        page = (where / "report.html").read_text()
        for raw in RAW:
            assert raw not in page, raw
        # The node's markup is in the page as text, never as an element.
        assert "img src=x onerror=alert(1)" in page and "<img src=x onerror" not in page
        record = json.loads((where / "record.json").read_text())
        (check,) = [c for c in record["checks"] if c["check"] == "gpu_count"]
        assert "ACCEPT: 8 nodes conform" in check["message"]
