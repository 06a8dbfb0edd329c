"""Issue 27: a shared profile's preflight tool names ran as code, as root, on every simulated node.

`software.preflight.tools: ['jq$(touch F)', 'x"; touch F; echo "', 'y`touch F`']` left the files on
every node. Now the profile is refused at load (file, line, value), and the preflight script itself
passes even such a name as one inert word, should a name ever reach it another way.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest
from simcluster import SimCluster

from pytest_fabric.probes.preflight import preflight_script

NODES = [f"node{i:02d}" for i in range(1, 9)]


def _hostile(marker: str) -> list[str]:
    return [f"jq$(touch {marker}-X)", f'x"; touch {marker}-Y; echo "', f"y`touch {marker}-Z`"]


def _left_on_nodes(simcluster: SimCluster, marker: str) -> dict[str, str]:
    found = {}
    for name in NODES:
        listed = simcluster.exec(name, ["sh", "-c", f"ls -d {marker}-* 2>/dev/null; true"])
        if listed.stdout.strip():
            found[name] = listed.stdout.strip()
            simcluster.exec(name, ["sh", "-c", f"rm -f {marker}-*"])
    return found


def test_a_profile_with_hostile_tool_names_is_refused_and_runs_nothing(
    pytester: pytest.Pytester, simcluster: SimCluster, sim_inventory: Path
) -> None:
    marker = f"/tmp/pf27-{uuid.uuid4().hex[:8]}"
    tools = "\n".join(f"      - {name!r}" for name in _hostile(marker))
    profile = pytester.path / "hostile.yaml"
    profile.write_text(f"name: hostile\nsoftware:\n  preflight:\n    tools:\n      - jq\n{tools}\n")
    try:
        result = pytester.runpytest_subprocess(
            "--cluster", str(sim_inventory), "--profile", str(profile), "-p", "no:cacheprovider",
            "-m", "software", timeout=240,
        )
    finally:
        left = _left_on_nodes(simcluster, marker)
    assert left == {}, f"the profile's tool names ran on the nodes: {left}"
    text = result.stdout.str() + result.stderr.str()
    assert f"{profile}:6: software.preflight.tools[1]: 'jq$(touch {marker}-X)'" in text, text[-3000:]
    assert result.ret != 0


def test_the_preflight_script_passes_hostile_names_as_words_over_ssh(simcluster: SimCluster) -> None:
    """Defence in depth: the script a node runs treats any name as data, whatever loaded it."""
    marker = f"/tmp/pf27-{uuid.uuid4().hex[:8]}"
    script = preflight_script([*_hostile(marker), "sh"])
    outputs = {}
    try:
        for name in NODES[:3]:
            ran = subprocess.run(simcluster.ssh_argv(name, script), capture_output=True, text=True, timeout=60)
            outputs[name] = ran.stdout
    finally:
        left = _left_on_nodes(simcluster, marker)
    assert left == {}, f"the preflight script ran a tool name as code: {left}"
    for name, out in outputs.items():
        assert f"@@missing jq$(touch {marker}-X)" in out and "@@tool sh /" in out, (name, out[:500])
