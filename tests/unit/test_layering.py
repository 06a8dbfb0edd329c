"""Dependencies point down: the evidence, the verdict and the report do not reach into the transports.

Read from the package's source with :mod:`ast` (nothing is imported but the package itself, to
find it).  An import counts wherever it is written (module level, in a function, under
``TYPE_CHECKING``): each is a dependency of the module's code.  What is *not* followed is the
parent packages' ``__init__``: importing ``pytest_fabric.transport.base`` runs
``pytest_fabric/transport/__init__.py``, which re-exports the SSH and local transports, so at run
time Python still loads those; the rules below are about what each module's own code depends on.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest_fabric

PACKAGE = Path(pytest_fabric.__file__).parent
NAME = pytest_fabric.__name__
TRANSPORT = f"{NAME}.transport"


def _is_under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([NAME, *parts])


def _file_of(module: str) -> Path | None:
    if not _is_under(module, NAME):
        return None
    base = PACKAGE.joinpath(*module.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


@cache
def _imports(path: Path) -> tuple[tuple[str, frozenset[str]], ...]:
    """(absolute module, names taken from it) for every import in ``path``; ``import m``: no names."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, frozenset[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, frozenset()) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append((target, frozenset(alias.name for alias in node.names)))
    return tuple(found)


def _imported_modules(path: Path) -> set[str]:
    """The package's modules ``path`` imports: ``from a import b`` is ``a``, and ``a.b`` when that is a module."""
    out = set()
    for module, names in _imports(path):
        submodules = {f"{module}.{n}" for n in names if _file_of(f"{module}.{n}") is not None}
        out |= submodules
        if not names or len(submodules) < len(names):  # not only ``from package import submodule``
            out.add(module)
    return {m for m in out if _file_of(m) is not None}


def _reach(start: Path) -> set[str]:
    """Every module of the package that ``start``'s imports load, following theirs in turn."""
    seen: set[str] = set()
    todo = list(_imported_modules(start))
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        path = _file_of(module)
        assert path is not None
        todo += _imported_modules(path)
    return seen


def _imports_subprocess(module: str) -> bool:
    path = _file_of(module)
    assert path is not None, module
    return any(_is_under(name, "subprocess") for name, _ in _imports(path))


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


RESULTS = f"{TRANSPORT}.results"


def test_command_result_is_taken_from_the_results_module_outside_the_transports() -> None:
    wrong = [
        f"{_rel(path)}: from {module} import CommandResult"
        for path in _modules()
        if not _is_under(_module_of(path), TRANSPORT)
        for module, names in _imports(path)
        if _is_under(module, TRANSPORT) and module != RESULTS and "CommandResult" in names
    ]
    assert not wrong, f"import CommandResult from {RESULTS}: {wrong}"


def test_the_evidence_module_is_a_leaf() -> None:
    path = PACKAGE / "transport" / "results.py"
    inside = {module for module, _ in _imports(path) if _is_under(module, NAME)}
    assert inside <= {f"{NAME}.config.units"}, f"transport/results.py imports {sorted(inside)}"


SLURM_SETTINGS = PACKAGE / "transport" / "slurm" / "settings.py"


def test_the_inventory_reaches_no_module_that_runs_subprocesses() -> None:
    running = sorted(m for m in _reach(PACKAGE / "config" / "inventory.py") if _imports_subprocess(m))
    assert not running, f"inventory.py loads modules that import subprocess: {running}"


def test_the_slurm_settings_module_imports_no_subprocess_running_code() -> None:
    module = _module_of(SLURM_SETTINGS)
    running = sorted(m for m in _reach(SLURM_SETTINGS) | {module} if _imports_subprocess(m))
    assert not running, f"{_rel(SLURM_SETTINGS)} loads {running}"


# The one transport type the report reads: report/errors.py decides which failed tests read as
# their error's message (node, command, fix) instead of a traceback, by the error's class,
# TransportError, the base of every error a transport raises.  It is not evidence but the error
# itself, and stays where the transports define it.
ALLOWED = {("report/errors.py", f"{TRANSPORT}.base"): {"TransportError"}}
# How a command ended and how much of its output is kept are plain data every layer reads; these two
# modules import nothing that connects or runs (test_the_evidence_module_is_a_leaf).
DATA_LEAVES = {RESULTS, f"{TRANSPORT}.outputcap"}


def test_the_verdict_the_record_and_the_report_do_not_import_the_transports() -> None:
    readers = [PACKAGE / "judge" / "verdict.py", PACKAGE / "record" / "check_record.py", *sorted((PACKAGE / "report").glob("*.py"))]
    wrong = []
    for path in readers:
        for module, names in _imports(path):
            if not _is_under(module, TRANSPORT) or module in DATA_LEAVES:
                continue
            allowed = ALLOWED.get((_rel(path), module), set())
            if not names or not names <= allowed:
                wrong.append(f"{_rel(path)}: from {module} import {', '.join(sorted(names - allowed)) or '*'}")
    assert not wrong, wrong


def test_the_verdict_and_the_record_do_not_reach_the_transports_at_all() -> None:
    for path in (PACKAGE / "judge" / "verdict.py", PACKAGE / "record" / "check_record.py"):
        reached = sorted(m for m in _reach(path) if _is_under(m, TRANSPORT) and m not in DATA_LEAVES)
        assert not reached, f"{_rel(path)} loads {reached}"
