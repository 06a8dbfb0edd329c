"""Dependencies point down: the layer rules of docs/design.md ("Layers"), read from the source.

The package's imports are read with :mod:`ast` (nothing is imported but the package itself, to
find it).  An import counts wherever it is written (module level, in a function, under
``TYPE_CHECKING``): each is a dependency of the module's code, and an import moved into a function
is still one.  What is *not* followed is the parent packages' ``__init__``: importing
``pytest_fabric.transport.base`` runs ``pytest_fabric/transport/__init__.py``, which re-exports the
SSH and local transports, so at run time Python still loads those; the rules below are about what
each module's own code depends on.  Every failure names the file, the line and the import.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest_fabric

PACKAGE = Path(pytest_fabric.__file__).parent
NAME = pytest_fabric.__name__
TRANSPORT = f"{NAME}.transport"
DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"

# The layers, lowest first: a module imports modules of its own layer and of the layers below it,
# never one above.  Each layer is a list of module prefixes under pytest_fabric ("" is the package's
# own __init__); a module belongs to the layer of its longest matching prefix, so a module can sit
# apart from the rest of its folder where its imports say it does (each such one says why below).
# docs/design.md#layers shows this table.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # plain values and files: units, nodesets, YAML with lines, the bundled files; the usage
    # warning any layer may raise
    ("primitives", ("config.units", "config.hostlist", "config.yamlsource", "config.bundled",
                    "inventories", "session.usage")),
    ("parsers", ("parsers",)),
    ("transport", ("transport",)),
    # pure judgement; pairs.py and retests.py are pure functions of node names that attribution
    # judges with and the profile validates against
    ("judgement", ("judge", "run.pairs", "run.retests")),
    # what the user wrote (inventory, profile) and what is declared of each check; applicability
    # holds the two against each other
    ("declarations", ("config", "checks.base", "judge.applicability")),
    ("record", ("record",)),
    ("run", ("run",)),
    # a check family: its declarations, measurement fixtures and probes.  plan.py prices each check
    # from what its probe runs (probes/nccl.py's collectives and scaling groups): it sits here until
    # the checks declare their own estimate
    ("checks", ("checks", "probes", "measurements", "run.plan")),
    ("report", ("report",)),
    ("session", ("session",)),
    ("slurm", ("slurm",)),
    ("wiring", ("plugin", "hookspecs", "")),
)

# Pure layers import less than everything below them: a parser reads text (and the units it
# returns), the transport runs commands (and expands nodesets) and knows no tool, check or run.
ONLY: dict[str, tuple[str, ...]] = {
    "parsers": ("parsers", "primitives"),
    "transport": ("transport", "primitives"),
}


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # absolute
    names: frozenset[str]  # ``import m``: none
    in_function: bool
    end_line: int

    def __str__(self) -> str:
        what = f"from {self.module} import {', '.join(sorted(self.names))}" if self.names else f"import {self.module}"
        return f"{_rel(self.path)}:{self.line}: {what}"


def _is_under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([NAME, *parts])


@cache
def _file_of(module: str) -> Path | None:
    if not _is_under(module, NAME):
        return None
    base = PACKAGE.joinpath(*module.split(".")[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# setup.py maps the suite (conformance/) and the profiles into the installed package: they are
# what the plugin runs and reads, not its code, and an installed copy must be judged as the checkout.
_MAPPED = {"conformance", "profiles"}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if "__pycache__" not in p.parts and p.relative_to(PACKAGE).parts[0] not in _MAPPED)


def _rel(path: Path) -> str:
    return f"{NAME}/{path.relative_to(PACKAGE).as_posix()}"


def _function_imports(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return inside


@cache
def _imports(path: Path) -> tuple[Import, ...]:
    """Every import written in ``path``, made absolute."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    inside = _function_imports(tree)
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(path, node.lineno, a.name, frozenset(), id(node) in inside, node.end_lineno or node.lineno)
                      for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = frozenset(alias.name for alias in node.names)
            found.append(Import(path, node.lineno, target, names, id(node) in inside, node.end_lineno or node.lineno))
    return tuple(sorted(found, key=lambda i: i.line))


def _targets(imp: Import) -> set[str]:
    """The package's modules one import loads: ``from a import b`` is ``a``, and ``a.b`` when that is a module."""
    submodules = {f"{imp.module}.{n}" for n in imp.names if _file_of(f"{imp.module}.{n}") is not None}
    out = set(submodules)
    if not imp.names or len(submodules) < len(imp.names):  # not only ``from package import submodule``
        out.add(imp.module)
    return {m for m in out if _file_of(m) is not None}


def _package_imports(path: Path) -> Iterator[tuple[Import, str]]:
    for imp in _imports(path):
        for target in sorted(_targets(imp)):
            yield imp, target


def _imported_modules(path: Path) -> set[str]:
    return {target for _, target in _package_imports(path)}


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
    return any(_is_under(imp.module, "subprocess") for imp in _imports(path))


@cache
def _layer_of(module: str) -> tuple[int, str] | None:
    """(rank, name) of the layer ``module`` belongs to: its longest matching prefix."""
    relative = module.removeprefix(NAME).removeprefix(".")
    best: tuple[int, int, str] | None = None
    for rank, (name, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = relative == prefix if prefix == "" else _is_under(relative, prefix)
            if matches and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank, name)
    return None if best is None else (best[1], best[2])


# ---------------------------------------------------------------------------------------------
# The layers


def test_every_module_has_a_layer() -> None:
    missing = [_rel(p) for p in _modules() if _layer_of(_module_of(p)) is None]
    assert not missing, f"modules in no layer (add their folder to LAYERS here and to docs/design.md#layers): {missing}"


def test_no_import_climbs_up() -> None:
    wrong = []
    for path in _modules():
        own = _layer_of(_module_of(path))
        assert own is not None
        for imp, target in _package_imports(path):
            theirs = _layer_of(target)
            assert theirs is not None
            if theirs[0] > own[0]:
                wrong.append(f"{imp}: {own[1]} imports {theirs[1]} ({target}), a layer above it")
    assert not wrong, "imports that climb up (docs/design.md#layers):\n" + "\n".join(wrong)


def test_the_pure_layers_import_only_what_they_may() -> None:
    wrong = []
    for path in _modules():
        own = _layer_of(_module_of(path))
        assert own is not None
        allowed = ONLY.get(own[1])
        if allowed is None:
            continue
        for imp, target in _package_imports(path):
            theirs = _layer_of(target)
            assert theirs is not None
            if theirs[1] not in allowed:
                wrong.append(f"{imp}: {own[1]} imports only {' and '.join(allowed)}, not {theirs[1]} ({target})")
    assert not wrong, "\n".join(wrong)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph.get(v, ()):
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_loops() -> None:
    graph = {_module_of(p): _imported_modules(p) for p in _modules()}
    loops = []
    for component in _strongly_connected(graph):
        members = set(component)
        edges = [
            str(imp)
            for module in component
            for imp, target in _package_imports(_file_of(module) or Path())
            if target in members
        ]
        loops.append(f"{' <-> '.join(component)}:\n  " + "\n  ".join(edges))
    assert not loops, "import loops (one of each must go; under TYPE_CHECKING or in a function counts too):\n" + "\n".join(loops)


def _says_why(lines: list[str], imp: Import) -> bool:
    """A comment on the import's own lines (one wrapped in parentheses has several) or just above it."""
    own = lines[imp.line - 1 : imp.end_line]
    above = lines[imp.line - 2].strip() if imp.line >= 2 else ""
    return any("#" in line for line in own) or above.startswith("#")


def test_an_import_inside_a_function_says_why() -> None:
    silent = []
    for path in _modules():
        lines = path.read_text().splitlines()
        silent += [str(imp) for imp in _imports(path) if imp.in_function and not _says_why(lines, imp)]
    assert not silent, (
        "imports inside functions with no comment saying why they are not at the top "
        "(move them up, or say why on the line or just above):\n" + "\n".join(silent)
    )


def test_design_md_shows_these_layers() -> None:
    text = DESIGN.read_text()
    block = re.search(r"<!-- layers: kept equal to tests/unit/test_layering.py LAYERS -->\n```\n(.*?)```", text, re.S)
    assert block, f"{DESIGN}: no layers block (see test_layering.py LAYERS)"
    shown = [line.split()[0] for line in block.group(1).splitlines() if line.strip()]
    assert shown == [name for name, _ in reversed(LAYERS)], (
        f"{DESIGN}'s layers block lists {shown}, test_layering.py LAYERS (highest first) "
        f"{[name for name, _ in reversed(LAYERS)]}: keep them equal"
    )


# ---------------------------------------------------------------------------------------------
# Rules within the layers


# What the judgement, the record and the report take from transport/ is its data: a command's
# result, the host key decisions (results.py) and the output cap (outputcap.py), both leaves.  And
# one type: report/errors.py decides which failed tests read as their error's message (node,
# command, fix) instead of a traceback by the error's class, TransportError, the base of every
# error a transport raises; it stays where the transports define it.
TRANSPORT_DATA = {f"{TRANSPORT}.results", f"{TRANSPORT}.outputcap"}
ALLOWED = {("report/errors.py", f"{TRANSPORT}.base"): {"TransportError"}}


def test_the_transport_data_modules_are_leaves() -> None:
    for module in sorted(TRANSPORT_DATA):
        path = _file_of(module)
        assert path is not None, module
        inside = sorted(imp.module for imp in _imports(path) if _is_under(imp.module, NAME))
        assert set(inside) <= {f"{NAME}.config.units"}, f"{_rel(path)} imports {inside}"


def test_the_judgement_the_record_and_the_report_import_transport_data_only() -> None:
    readers = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] in {"judge", "record", "report"}]
    wrong = []
    for path in readers:
        for imp in _imports(path):
            if not _is_under(imp.module, TRANSPORT) or imp.module in TRANSPORT_DATA:
                continue
            allowed = ALLOWED.get((path.relative_to(PACKAGE).as_posix(), imp.module), set())
            if not imp.names or not imp.names <= allowed:
                wrong.append(f"{imp} (take {', '.join(sorted(TRANSPORT_DATA))} only)")
    assert not wrong, wrong


def test_the_verdict_and_the_record_reach_no_transport() -> None:
    for path in [PACKAGE / "judge" / "verdict.py", *sorted((PACKAGE / "record").glob("*.py"))]:
        reached = sorted(m for m in _reach(path) if _is_under(m, TRANSPORT) and m not in TRANSPORT_DATA)
        assert not reached, f"{_rel(path)} loads {reached}"


def test_command_result_is_taken_from_the_results_module() -> None:
    wrong = [
        f"{imp} (from {TRANSPORT}.results import CommandResult)"
        for path in _modules()
        for imp in _imports(path)
        if _is_under(imp.module, TRANSPORT) and imp.module != f"{TRANSPORT}.results" and "CommandResult" in imp.names
        and not _is_under(_module_of(path), TRANSPORT)
    ]
    assert not wrong, wrong


def test_the_inventory_reaches_no_module_that_runs_subprocesses() -> None:
    path = PACKAGE / "config" / "inventory.py"
    running = sorted(m for m in _reach(path) if _imports_subprocess(m))
    assert not running, f"{_rel(path)} loads modules that import subprocess: {running}"
