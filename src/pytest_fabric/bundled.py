"""Where the bundled conformance suite, profiles and inventories are: packages inside ``pytest_fabric``.

They ship in the wheel like any module, so an installed pytest-fabric finds them from any
directory; nothing here depends on a source checkout.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["conformance_dir", "profiles_dir", "inventories_dir", "bundled_inventories", "inventory_path"]

_PACKAGE = Path(__file__).resolve().parent


def conformance_dir() -> Path:
    """The folder of the bundled conformance suite."""
    return _PACKAGE / "conformance"


def profiles_dir() -> Path:
    """The folder of the bundled profiles."""
    return _PACKAGE / "profiles"


def inventories_dir() -> Path:
    """The folder of the bundled inventories (``local``: this machine, without SSH)."""
    return _PACKAGE / "inventories"


def bundled_inventories() -> list[str]:
    """Names ``--cluster`` accepts in place of a path."""
    return sorted(p.stem for p in inventories_dir().glob("*.yaml"))


def inventory_path(ref: str) -> Path:
    """``--cluster REF``: a path to an inventory file, or the name of a bundled one.

    A file of that name in the current directory wins over the bundled one, so a user's own
    ``local`` (no suffix) is never shadowed.
    """
    path = Path(ref).expanduser()
    if path.exists() or ref not in bundled_inventories():
        return path
    return inventories_dir() / f"{ref}.yaml"
