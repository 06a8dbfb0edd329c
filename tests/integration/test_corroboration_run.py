"""A wrapper that inflates a tool's output consistently is caught by a witness it does not control.

On three simulated nodes, node02 runs a provider's wrapper in front of the real iperf3 (every byte
count and rate of its JSON times four: bytes over seconds still give the rate) and in front of the
ib_write_bw stand-in (asked for -D 2 it runs -D 1, then prints bandwidth and message rate times
four and iterations times eight: what -D 2 at four times the rate would have counted). The kernel's
interface counters and the HCA ports' PortXmitData/PortRcvData still count what crossed, and the
transport timed the short run: the pair node02 measures from fails as uncorroborated on node02; the
other pairs pass with their corroborations noted; software_consistency names node02's iperf3 by
path and SHA-256. One run of the real command line, both checks, about 15 s.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simcluster import SimCluster
from simcluster.hardware import FakeHardware, hardware_installed, standin_launcher

PROFILE = Path(__file__).resolve().parents[1] / "data" / "profiles" / "sim-corroboration.yaml"
CHEAT = "node02"

# Runs the real iperf3 and multiplies every "bytes" and "bits_per_second" of its JSON by four.
IPERF3_WRAPPER = r"""#!/bin/sh
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

# Runs the stand-in (kept under .real/, beside the model it reads) for -D 1 whatever -D it was asked,
# and multiplies each table row's peak, average and message rate by four and its iterations by eight
# (-D 2's window is twice -D 1's): its own figures still agree with each other.
PERFTEST_WRAPPER = r"""#!/bin/sh
prev=
for a; do shift; [ "$prev" = -D ] && a=1; set -- "$@" "$a"; prev=$a; done
/usr/local/bin/.real/ib_write_bw "$@" | awk '
/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { printf " %s %d %.2f %.2f %.6f\n", $1, $2 * 8, $3 * 4, $4 * 4, $5 * 4; next }
{ print }'
"""


def _wrap(cluster: SimCluster, node: str) -> None:
    bindir = cluster.node(node).bindir
    real = bindir / ".real"
    real.mkdir(exist_ok=True)
    (real / "fabric-hardware.json").write_text((bindir / "fabric-hardware.json").read_text())
    (real / "ib_write_bw").write_text(standin_launcher("fabric_standin"))
    (real / "ib_write_bw").chmod(0o755)
    cluster.install_tool(node, "ib_write_bw", PERFTEST_WRAPPER)
    cluster.install_tool(node, "iperf3", IPERF3_WRAPPER)


@pytest.fixture(scope="module")
def record(simcluster: SimCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    import json

    work = tmp_path_factory.mktemp("corroboration")
    nodes = simcluster.nodes[:3]
    inventory = simcluster.write_inventory(work / "inventory.yaml", nodes=nodes)
    with hardware_installed(simcluster, {n.name: FakeHardware() for n in nodes}):
        _wrap(simcluster, CHEAT)
        try:
            result = subprocess.run(
                [sys.executable, "-m", "pytest", "--cluster", str(inventory), "--profile", str(PROFILE),
                 "-k", "tcp_throughput or rdma_bandwidth or software_consistency", "-p", "no:cacheprovider",
                 "--conformance-json", "record.json", "-q", "-rfE"],
                cwd=work, capture_output=True, text=True, timeout=300,
            )
        finally:
            bindir = simcluster.node(CHEAT).bindir
            (bindir / "iperf3").unlink(missing_ok=True)
            simcluster.install_tool(CHEAT, "ib_write_bw", standin_launcher("fabric_standin"))  # for uninstall
            for name in ("ib_write_bw", "fabric-hardware.json"):
                (bindir / ".real" / name).unlink(missing_ok=True)
            (bindir / ".real").rmdir()
    data = json.loads((work / "record.json").read_text())
    data["_stdout"] = result.stdout
    yield data


def _checks(record: dict[str, Any], check: str) -> list[dict[str, Any]]:
    found = [c for c in record["checks"] if c["check"] == check]
    assert found, record["_stdout"][-3000:]
    return found


@pytest.mark.parametrize(("check", "witness"), [("tcp_throughput", "interface counters"),
                                                ("rdma_bandwidth", "HCA port counters")])
def test_the_inflating_node_is_uncorroborated_and_named(record: dict[str, Any], check: str, witness: str) -> None:
    checks = _checks(record, check)
    failed = [c for c in checks if c["outcome"] != "passed"]
    assert len(failed) == 1, record["_stdout"][-3000:]
    (bad,) = failed
    assert bad["outcome"] == "failed" and f"uncorroborated on {CHEAT}" in bad["message"], bad["message"]
    assert bad["subject"].startswith(CHEAT)  # node02 ran the client: its tool claimed the figure
    caught = [c for c in bad["extra"]["corroborations"] if c["status"] == "uncorroborated"]
    # perftest was asked for -D 2 and its command returned after about 1 s: the duration caught it too
    caught_by = {witness, "duration"} if check == "rdma_bandwidth" else {witness}
    assert caught and {c["node"] for c in caught} == {CHEAT} and {c["witness"] for c in caught} == caught_by
    assert all(c["claimed"] > 3 * c["witnessed"] for c in caught if c["witness"] == witness)
    short = [c for c in caught if c["witness"] == "duration"]  # one per rail
    assert all(c["claimed"] == 2 and c["witnessed"] < 1.9 for c in short), short
    # Consistent inflation: its own figures still agree with each other.
    assert {c["status"] for c in bad["extra"]["corroborations"] if c["witness"] == "internal"} == {"agrees"}


@pytest.mark.parametrize(("check", "witness"), [("tcp_throughput", "interface counters"),
                                                ("rdma_bandwidth", "HCA port counters")])
def test_honest_pairs_pass_with_every_corroboration_noted(record: dict[str, Any], check: str, witness: str) -> None:
    honest = [c for c in _checks(record, check) if c["outcome"] == "passed"]
    assert len(honest) == 2
    for c in honest:
        found = c["extra"]["corroborations"]
        # iperf3's -t and perftest's -D are each covered by the time their command took
        assert {f["witness"] for f in found} == {"internal", witness, "duration"}
        assert {f["status"] for f in found} == {"agrees"}, found


def test_record_identifies_every_binary_by_path_and_sha256(record: dict[str, Any]) -> None:
    for check, tool in (("tcp_throughput", "iperf3"), ("rdma_bandwidth", "ib_write_bw")):
        for c in _checks(record, check):
            identity = c["extra"]["tool_identity"]
            assert set(identity) == set(c["nodes"])
            for node, tools in identity.items():
                assert len(tools[tool]["sha256"]) == 64 and tools[tool]["resolved"].startswith("/")
                if node == CHEAT:
                    assert tools[tool]["script"] == "#!/bin/sh" and tools[tool]["resolved"] == f"/usr/local/bin/{tool}"


def test_software_consistency_names_the_node_whose_tool_differs(record: dict[str, Any]) -> None:
    (c,) = _checks(record, "software_consistency")
    assert c["outcome"] == "failed"
    assert f"{CHEAT}: iperf3 sha256" in c["message"] and "/usr/local/bin/iperf3" in c["message"]
    assert f"{CHEAT}: ib_write_bw sha256" in c["message"]
    assert "/usr/bin/iperf3" in c["message"]  # the majority's file
