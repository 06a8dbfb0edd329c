"""Where the bundled conformance suite and profiles are.

Installed, they are the packages ``pytest_fabric.conformance`` and
``pytest_fabric.profiles`` (pyproject maps the top-level ``conformance/`` and
``profiles/`` folders there).  Run from a source checkout with ``python -m
pytest``, the checkout's ``pytest_fabric`` shadows the installed one and those
mapped packages do not exist under it: then they are the folders beside it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["conformance_dir", "profiles_dir"]

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _locate(package: str, folder: str) -> Path:
    try:
        module = importlib.import_module(f"pytest_fabric.{package}")
    except ModuleNotFoundError:
        candidate = _SOURCE_ROOT / folder
        if candidate.is_dir():
            return candidate
        raise
    return Path(next(iter(module.__path__)))


def conformance_dir() -> Path:
    """The folder of the bundled conformance suite."""
    return _locate("conformance", "conformance")


def profiles_dir() -> Path:
    """The folder of the bundled profiles."""
    return _locate("profiles", "profiles")
