"""Where the bundled conformance suite and profiles are: packages inside ``pytest_fabric``.

They ship in the wheel like any module, so an installed pytest-fabric finds them from any
directory; nothing here depends on a source checkout.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["conformance_dir", "profiles_dir"]

_PACKAGE = Path(__file__).resolve().parent


def conformance_dir() -> Path:
    """The folder of the bundled conformance suite."""
    return _PACKAGE / "conformance"


def profiles_dir() -> Path:
    """The folder of the bundled profiles."""
    return _PACKAGE / "profiles"
