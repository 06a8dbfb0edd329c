"""The tenant's own iperf3 (inventory ``tools:``) measures every pair, whatever the nodes put on PATH.

Three simulated nodes, one run of the real command line (``-k "preflight or tcp_throughput"``),
about 10 s. node02 has a provider's wrapper in front of iperf3 on PATH (/usr/local/bin) that inflates
its JSON four times and leaves a marker when it runs: the tenant pins the real /usr/bin/iperf3 by
its SHA-256, so every pair measures through the uploaded copy, the wrapper never runs, and each
record names the copy that ran and says its hash was verified on the node. node03 runs a daemon
that replaces any uploaded iperf3 with a wrapper of its own as soon as the upload lands: node03 is
named (the upload's verification, or the hash checked again before each run, refuses the changed
file), the replacement never runs, and no check involving node03 passes.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-tenant-tools.yaml"
IPERF3 = Path("/usr/bin/iperf3")
LIAR, TAMPERER = "node02", "node03"
# Inside a node /usr/local/bin is the node's bindir: a marker there is a file the test can see.
WRAPPER_RAN = ".wrapper-ran"
SWAP_RAN = ".swap-ran"

# The provider's wrapper on node02's PATH: leaves a marker, then inflates every byte count and rate.
WRAPPER = r"""#!/bin/sh
touch /usr/local/bin/""" + WRAPPER_RAN + r"""
case " $* " in *" -J "*) ;; *) exec /usr/bin/iperf3 "$@" ;; esac
/usr/bin/iperf3 "$@" | python3 -S -c '
import json, sys
def scale(x):
    if isinstance(x, dict):
        return {k: v * 4 if k in ("bytes", "bits_per_second") and isinstance(v, (int, float)) else scale(v)
                for k, v in x.items()}
    return [scale(v) for v in x] if isinstance(x, list) else x
json.dump(scale(json.load(sys.stdin)), sys.stdout, indent=1)
'
"""

# node03's daemon: once an uploaded iperf3 is whole (its size is the pinned file's), swap in a wrapper.
TAMPER = r"""
while :; do
  for f in /tmp/.pytest-fabric-*/iperf3; do
    [ -f "$f" ] && [ "$(stat -c %s "$f")" = "SIZE" ] || continue
    printf '#!/bin/sh\ntouch /usr/local/bin/""" + SWAP_RAN + r"""\nexec /usr/bin/iperf3 "$@"\n' > "$f"
  done
  sleep 0.005
done
"""


def _run_dirs(cluster: SimCluster, node: str) -> str:
    return str(cluster.exec(node, ["sh", "-c", "ls -d /tmp/.pytest-fabric-* 2>/dev/null; true"]).stdout).strip()


@pytest.fixture(scope="module")
def run(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    work = tmp_path_factory.mktemp("tenant-tools")
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes, extra={
        "tools": {"iperf3": {"path": str(IPERF3), "sha256": hashlib.sha256(IPERF3.read_bytes()).hexdigest()}},
    })
    simcluster.install_tool(LIAR, "iperf3", WRAPPER)
    tamper = simcluster.popen(TAMPERER, ["sh", "-c", TAMPER.replace("SIZE", str(IPERF3.stat().st_size))],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(PROFILE),
             "-k", "preflight or tcp_throughput", "-p", "no:cacheprovider", "--conformance-json", "record.json",
             "-q", "-rfE"],
            cwd=work, capture_output=True, text=True, timeout=300,
        )
    finally:
        tamper.kill()
        tamper.wait()
        simcluster.remove_tool(LIAR, "iperf3")
    record = json.loads((work / "record.json").read_text())
    record["_stdout"] = result.stdout
    record["_left"] = {n.name: _run_dirs(simcluster, n.name) for n in nodes}
    markers = {name: [(n.bindir / name).exists() for n in nodes] for name in (WRAPPER_RAN, SWAP_RAN)}
    for n in nodes:
        for name in (WRAPPER_RAN, SWAP_RAN):
            (n.bindir / name).unlink(missing_ok=True)
    record["_markers"] = markers
    yield record


def _checks(record: dict[str, Any], check: str) -> list[dict[str, Any]]:
    found = [c for c in record["checks"] if c["check"] == check]
    assert found, record["_stdout"][-3000:]
    return found


def test_the_pinned_copy_measures_and_the_wrapper_on_path_never_runs(run: dict[str, Any]) -> None:
    assert run["_markers"][WRAPPER_RAN] == [False, False, False], run["_stdout"][-3000:]
    honest = [c for c in _checks(run, "tcp_throughput") if TAMPERER not in c["nodes"]]
    assert len(honest) == 1 and honest[0]["outcome"] == "passed", run["_stdout"][-3000:]
    (check,) = honest
    assert LIAR in check["nodes"]
    # the figure is what crossed the link: the wrapper's four-fold figure would be uncorroborated
    assert {c["status"] for c in check["extra"].get("corroborations", [])} <= {"agrees"}
    pinned = hashlib.sha256(IPERF3.read_bytes()).hexdigest()
    for node, tools in check["extra"]["tool_identity"].items():
        iperf3 = tools["iperf3"]
        assert iperf3["supplied_by"] == "tenant" and iperf3["verified_on_node"] is True, (node, iperf3)
        assert iperf3["sha256"] == iperf3["pinned_sha256"] == pinned
        assert iperf3["path"].startswith("/tmp/.pytest-fabric-") and iperf3["path"].endswith("/iperf3")
    commands = [e["command"] for e in check.get("evidence", []) if "iperf3" in e.get("command", "")]
    assert commands and all("env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin" in c for c in commands), commands


def test_a_node_that_swaps_the_uploaded_file_is_named_and_its_swap_never_runs(run: dict[str, Any]) -> None:
    assert run["_markers"][SWAP_RAN] == [False, False, False], run["_stdout"][-3000:]
    tampered = [c for c in _checks(run, "tcp_throughput") if TAMPERER in c["nodes"]]
    assert len(tampered) == 2
    for c in tampered:
        assert c["outcome"] in ("error", "failed"), c
        assert TAMPERER in c["message"] and "sha256" in c["message"].lower(), c["message"]
    (pre,) = [c for c in _checks(run, "preflight") if c["nodes"] == [TAMPERER]]
    assert pre["outcome"] != "passed" and "the tenant's iperf3" in pre["message"], pre["message"]


def test_the_run_removes_its_directories_from_every_node(run: dict[str, Any]) -> None:
    assert run["_left"] == {"node01": "", "node02": "", "node03": ""}
    assert "the tenant's tools: checked again and removed on" in run["_stdout"]
