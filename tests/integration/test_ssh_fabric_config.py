"""Fabric's own config files (``~/.fabric.yaml``, ``/etc/fabric.yaml``) do not decide how nodes are reached.

Fabric reads them for every ``Connection``: a ``user: nobody`` (or ``port:``, or
``load_ssh_configs: false``) left there for some other tool silently changed how every node was
reached, and neither the inventory nor the ssh_config said so.  Only the inventory and the
ssh_config (``~/.ssh/config`` or ``--ssh-config``) decide.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from simcluster import SimCluster


def test_fabric_yaml_in_home_changes_nothing(
    pytester: pytest.Pytester, simcluster: SimCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".fabric.yaml").write_text("user: nobody\nport: 2\nload_ssh_configs: false\n")
    # The key comes from ~/.ssh/config, which Fabric was told above not to read: it is read all the same.
    (home / ".ssh" / "config").write_text(f"Host *\n  IdentityFile {simcluster.client_key}\n")
    monkeypatch.setenv("HOME", str(home))
    # User, port and key left to ssh_config, then OpenSSH's defaults (the local user, port 22).
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=["node01"])
    doc = yaml.safe_load(inventory.read_text())
    for key in ("user", "port", "identity_file"):
        del doc["defaults"][key]
    inventory.write_text(yaml.safe_dump(doc))
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", "roce-small", "-p", "no:cacheprovider", "-k", "link_layer",
        timeout=300,
    )
    out = result.stdout.str()
    assert "nobody" not in out and ":2 " not in out, out[-3000:]
    # It reached the node as root on port 22 with the key: the check ran there (and found no ibstat).
    result.stdout.fnmatch_lines(["node node01: ibstat: command not found"])
