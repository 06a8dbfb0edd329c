"""Where the bundled conformance suite, profiles and inventories are: packages inside ``pytest_fabric``.

In the repository the suite and the profiles sit at the top level (``conformance/``,
``profiles/``); the wheel installs them as ``pytest_fabric.conformance`` and
``pytest_fabric.profiles`` (setup.py maps them), so an installed pytest-fabric finds them
from any directory. An editable install maps the same names onto the checkout.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["bundled_inventory_name", "bundled_inventories", "conformance_dir", "inventories_dir", "inventory_path",
           "profiles_dir", "shown_inventory", "starter_command"]

_PACKAGE = Path(__file__).resolve().parent.parent  # pytest_fabric/, where profiles/ and inventories/ are


def _mapped_package(name: str, folder: str) -> Path:
    """Where package ``pytest_fabric.<name>`` is installed; the checkout's ``<folder>/`` when it is not.

    The fallback serves a checkout put on ``sys.path`` by hand (``PYTHONPATH=.``); an installed
    copy, editable or not, always finds the package.
    """
    spec = importlib.util.find_spec(f"pytest_fabric.{name}")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).resolve()
    return _PACKAGE.parent / folder


def conformance_dir() -> Path:
    """The folder of the bundled conformance suite (``conformance/`` in the repository)."""
    return _mapped_package("conformance", "conformance")


def profiles_dir() -> Path:
    """The folder of the bundled profiles (``profiles/`` in the repository)."""
    return _mapped_package("profiles", "profiles")


def inventories_dir() -> Path:
    """The folder of the bundled inventories (``local``: this machine, without SSH)."""
    return _PACKAGE / "inventories"


def bundled_inventories() -> list[str]:
    """Names ``--cluster`` accepts in place of a path."""
    return sorted(p.stem for p in inventories_dir().glob("*.yaml"))


def bundled_inventory_name(path: Path | str) -> str | None:
    """The name of the bundled inventory at ``path`` (``slurm``); None for a user's own file.

    A bundled inventory lives inside the installed package (site-packages): a message never sends a
    user there to edit it, but to a copy of their own (:func:`starter_command`).
    """
    try:
        resolved = Path(path).resolve()
    except OSError:
        return None
    return resolved.stem if resolved.parent == inventories_dir().resolve() else None


def shown_inventory(path: Path | str) -> str:
    """How a message names an inventory: its path, or ``the bundled inventory 'slurm'``."""
    name = bundled_inventory_name(path)
    return f"the bundled inventory {name!r} (--cluster {name})" if name else f"inventory {path}"


def starter_command(name: str) -> str:
    """The command that writes an editable copy of bundled inventory ``name`` to the current directory."""
    return f"python -m pytest_fabric.inventories {name} my-{name}.yaml"


def inventory_path(ref: str) -> Path:
    """``--cluster REF``: a path to an inventory file, or the name of a bundled one.

    A file of that name in the current directory wins over the bundled one, so a user's own
    ``local`` (no suffix) is never shadowed.
    """
    path = Path(ref).expanduser()
    if path.exists() or ref not in bundled_inventories():
        return path
    return inventories_dir() / f"{ref}.yaml"
