"""One machine under two names that the inventory cannot tell apart (an ssh_config alias and its
address) is refused at connect: both names presented one host key (issue 33)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from simcluster import SimCluster


def test_two_names_presenting_one_host_key_are_refused(pytester: pytest.Pytester, simcluster: SimCluster,
                                                        tmp_path: Path) -> None:
    node = simcluster.nodes[0]
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text(f"Host twin\n  HostName {node.address}\n")
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=[node.name])
    doc = yaml.safe_load(inventory.read_text())
    doc["nodes"].append({"name": "twin", "host": "twin"})
    inventory.write_text(yaml.safe_dump(doc))
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", "localhost", "--ssh-config", str(ssh_config),
        "-p", "no:cacheprovider", "-k", "mtu", timeout=180,
    )
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*presented the host key SHA256:* that node * presented: one machine listed twice*"])
    assert "1 passed" in out and "1 error" in out, out[-3000:]
