"""Which checks the profile sets that this inventory cannot measure: said at load, not at the end.

The provider being judged writes the inventory and installs the nodes, so a selected check the
profile sets must never turn into a quiet skip because the inventory left something out (no mounts, no
``leaf`` labels, no URL to download) or because the check cannot exist on this cluster (a
median of fewer than three pairs).  :func:`unmeasurable` lists each such check with the
inventory key to add; the plugin stops with a usage error after collection, before touching a
node, for those still selected (a check ``-k`` leaves out makes the run INCOMPLETE anyway).  A check the
profile marks ``optional: true`` is exempt: its skip is listed under "not run" and does not
block ACCEPT.  Pure: no I/O, no pytest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_fabric.checks import base as checks
from pytest_fabric.config.bundled import bundled_inventory_name, shown_inventory, starter_command
from pytest_fabric.config.inventory import Inventory
from pytest_fabric.config.profile import Profile, Text
from pytest_fabric.run.pairs import Pair

__all__ = ["cannot_exist", "unmeasurable"]

_FIX = "or mark the check `optional: true` in the profile"


def _set(profile: Profile, check: checks.Check[Any]) -> bool:
    spec = profile.spec(check.layer, check.setting)
    return spec is not None and not spec.optional


def _needs(inventory: Inventory, where: str) -> dict[str, str | None]:
    """Need (``Check.needs``) -> why this inventory does not give it, with the key to add (``CHECK``
    stands for the check's name); None: it does."""
    targets = inventory.egress_targets
    downloadable = [t for t in targets if t.startswith(("http://", "https://")) and t not in inventory.upload_targets]
    leaves = {n.labels.get("leaf") for n in inventory.nodes if n.labels.get("leaf")}
    node_local = all(m.shared is False or (m.fstype is not None and not m.is_shared()) for m in inventory.mount_specs)
    return {
        "mounts": None if inventory.mounts else (
            f"{where} lists no storage.mounts: add the mounts to measure (storage: {{mounts: [/scratch]}}); a temp "
            "dir is no storage of the cluster's"),
        "shared_mount": None if not node_local else (
            f"{where} lists no shared mount (all are node-local): CHECK measures all nodes writing to one shared "
            "filesystem"),
        "egress_targets": None if targets else (
            f"{where} lists no egress.targets: add the hosts or URLs to reach "
            "(egress: {targets: [https://mirror.example.com/100MB.bin]})"),
        "download_url": None if downloadable else (
            f"{where} lists no http(s) URL to download under egress.targets (host:port targets get dns_resolve and "
            "connect_latency only)"),
        "upload_target": None if inventory.upload_targets else (
            f"{where} marks no egress target `upload: true` "
            "(egress: {targets: [{url: https://upload.example.com/drop, upload: true}]})"),
        "leaves": None if len(leaves) >= 2 else (
            f"{where} labels {len(leaves)} leaf value(s); CHECK compares traffic across leaves: label the nodes "
            "`labels: {leaf: leaf1}` by the leaf switch they hang off"),
    }


def unmeasurable(profile: Profile, inventory: Inventory, pairs: Sequence[Pair],
                 registry: checks.CheckRegistry = checks.NO_CHECKS) -> list[tuple[str, str]]:
    """(``layer.key``, why) for each set check this inventory gives nothing to measure, naming what to add:
    the first of its declared ``needs`` the inventory does not meet. ``registry``: the run's checks."""
    out: list[tuple[str, str]] = []
    where = shown_inventory(inventory.path)
    bundled = bundled_inventory_name(inventory.path)
    # A bundled inventory is the package's own file: the fix is a copy of it, never an edit there.
    fix = f"{starter_command(bundled)} writes a copy to fill in; {_FIX}" if bundled else _FIX

    def need(check: checks.Check[Any], why: str) -> None:
        if _set(profile, check):
            out.append((check.profile_key, f"{check.profile_key}: {why} ({fix})"))

    unmet = _needs(inventory, where)
    for check in registry.declared():
        why = next((unmet[n] for n in check.needs if unmet.get(n)), None)
        if why is not None:
            need(check, why.replace("CHECK", check.name))

    fed = list(registry.blame_inputs())  # the pair checks that declare they feed attribution
    for check in registry.declared():
        if "pair_checks" in check.needs and _set(profile, check) and not any(profile.spec("inter_node", c) for c in fed):
            out.append((check.profile_key, f"{check.profile_key}: {check.name} judges what the pair checks "
                        f"({', '.join(fed)}) measured; profile {profile.name} sets none (set one, {_FIX})"))
    link_layer = registry.statement(profile, "link_layer", Text)
    if link_layer is not None and link_layer.value.lower() == "ethernet":
        for check in registry.declared():
            if "infiniband" in check.needs:
                need(check, f"{check.name} reads an InfiniBand subnet; this profile's link_layer is ethernet")
    return out


def cannot_exist(profile: Profile, inventory: Inventory, pairs: Sequence[Pair],
                 registry: checks.CheckRegistry = checks.NO_CHECKS) -> list[tuple[str, str]]:
    """(``layer.key``, why) for set checks that cannot exist on a cluster this small: nothing the
    inventory could add makes them measurable (their declared ``needs``: a median of at least three
    pairs, scaling over at least three nodes).  Said at load, in the header; they are listed under
    "not run" and do not block ACCEPT. ``registry``: the run's checks."""
    out: list[tuple[str, str]] = []
    nodes = len(inventory.nodes)
    unmet = {
        "three_nodes": None if nodes >= 3 else f"CHECK needs at least 3 nodes; the inventory has {nodes}",
        "three_pairs": None if len(pairs) >= 3 else (
            f"a median needs at least 3 pairs; {nodes} node(s) give {len(pairs)}"),
    }
    for check in registry.declared():
        why = next((unmet[n] for n in check.needs if unmet.get(n)), None)
        if why is not None and _set(profile, check) and check.profile_key not in dict(out):
            out.append((check.profile_key, why.replace("CHECK", check.name)))
    return out
