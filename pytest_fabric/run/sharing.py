"""What the members of a storage or egress wave share, and how many of them use it at once.

One answer, read by the measurement fixtures (the ``shares`` of their ``@wave``) and by the
plan (how long a wave takes), so what the plan counts is what the run does.

- **A shared mount** (as :mod:`pytest_fabric.run.locality` decides from ``shared:`` and what findmnt
  shows on the nodes: nfs, lustre, the same source on every node of no stated type, ...) is one
  filesystem under every node, so a per-node figure there depends on how many nodes
  use it at once. The check's ``measured:`` says which figure the profile asks for: ``alone`` (the
  default; each node's client on an otherwise idle mount, ``concurrency`` nodes at a time, 1 unless
  the check says more) or ``together`` (every node of the wave at once, up to ``--fabric-fanout``:
  each figure is that node's share of what the mount gave them all; fio runs time-based for the
  check's ``runtime`` and the nodes are launched at once, probes/storage.py ``together``, so every
  share is over the same window). A node-local mount, or the temp dir, is each node's own disk:
  every node at once, whatever ``measured:`` says.
- **An egress server** (a target's host and port) is someone else's: a mirror does not want 512
  downloads at once from one site. Downloads and uploads to one server run at most
  ``egress.concurrency`` (inventory, default 8) at a time, fewer where the check's own
  ``concurrency`` says so, even when ``--fabric-fanout`` is larger. dns_resolve and
  connect_latency are a lookup and three TCP connects: they run in the wave uncapped.

:func:`share_for` is what the plan calls for a subject's parameter; :func:`at_once` says how many
of a wave's members holding one resource run together under a fan-out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

from pytest_fabric.config.inventory import Inventory
from pytest_fabric.config.profile import Profile
from pytest_fabric.run.batches import Share
from pytest_fabric.run.locality import MountSharing

__all__ = [
    "Measured",
    "at_once",
    "egress_server",
    "egress_share",
    "loads_mount",
    "measured_mode",
    "mount_is_shared",
    "mount_share",
    "share_for",
]

#: how a per-node figure on a shared mount is taken: each node alone (taking turns), or all together
Measured = Literal["alone", "together"]


def mount_is_shared(inventory: Inventory, path: str | None, found: MountSharing | None = None) -> bool:
    """Whether nodes measuring ``path`` share one filesystem: as the run decided from the inventory and
    findmnt (``found``: :func:`pytest_fabric.run.locality.decide`), else stated so, or not stated as node-local.

    A mount whose type the inventory does not state counts as shared: taking turns on a node-local
    disk is slower, never wrong; all at once on a shared one would judge a share as a node's own.
    """
    if path is None:
        return False  # each node's own temp dir
    if found is not None:
        return found.shared
    stated = inventory.mount(path)
    if stated.shared is not None:
        return stated.shared
    return stated.fstype is None or stated.is_shared()


def measured_mode(profile: Profile, check: str) -> Measured:
    """What the storage check's per-node figure is on a shared mount: ``alone`` or ``together``."""
    spec = profile.spec("storage", check)
    mode = getattr(spec, "measured", "alone")
    return "together" if mode == "together" else "alone"


def loads_mount(profile: Profile, check: str) -> bool:
    """Whether storage ``check``, as the profile sets it, loads its mount (fio), as its settings model
    says; the ``mount`` check reads findmnt and loads nothing, and a check the profile does not set
    runs nothing."""
    spec = profile.spec("storage", check)
    return spec is not None and spec.SHARES == "mount"


def mount_share(
    inventory: Inventory, profile: Profile, check: str, path: str | None, found: MountSharing | None = None
) -> Share | None:
    """What a node measuring storage ``check`` on ``path`` shares: the mount, taken in turns (alone), or nothing.
    ``found``: the run's decision for the mount (:func:`mount_is_shared`)."""
    if (not loads_mount(profile, check) or not mount_is_shared(inventory, path, found)
            or measured_mode(profile, check) == "together"):
        return None
    spec = profile.spec("storage", check)
    return Share(f"shared mount {path}", int(getattr(spec, "concurrency", 1) or 1))


def egress_server(target: str) -> str:
    """The server a target's transfers load: ``host:port`` (two URLs on one mirror are one server)."""
    parts = urlsplit(target if "://" in target else f"tcp://{target}")
    host = parts.hostname or target
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port else shown


def egress_share(inventory: Inventory, profile: Profile, check: str, target: str) -> Share | None:
    """What a node's ``check`` to ``target`` shares: its server, at most ``egress.concurrency`` at once."""
    spec = profile.spec("egress", check)
    # the settings model says whether its transfers load the target's server (download, upload)
    if spec is None or spec.SHARES != "server":
        return None
    limit = inventory.egress_concurrency
    own = getattr(spec, "concurrency", None)
    if own is not None:
        limit = min(limit, int(own))
    return Share(f"egress target {egress_server(target)}", limit)


def share_for(
    inventory: Inventory, profile: Profile, check: str, subject: str, param: Any,
    found: Callable[[str], MountSharing | None] | None = None,
) -> Share | None:
    """What one test's subject shares in its check's wave (``param`` as the subject fixture takes it:
    ``(node, path)`` for a mount, ``(node, target)`` for an egress target); None: nothing, it runs
    under ``--fabric-fanout`` alone. ``found``: the run's decision for a mount path, where made.
    The run's fixtures use the same rules."""
    if subject == "mount":
        path = param[1]
        return mount_share(inventory, profile, check, path, found(path) if found and path else None)
    if subject == "egress_target":
        return egress_share(inventory, profile, check, param[1])
    return None


def at_once(share: Share | None, holders: int, fanout: int) -> int:
    """How many of the ``holders`` of one resource run together under ``fanout`` (nodes, a member each)."""
    cap = fanout if share is None else min(share.limit, fanout)
    return max(1, min(holders, cap))
