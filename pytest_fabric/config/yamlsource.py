"""YAML loading that remembers where each value was written.

Users write inventories and profiles by hand; when one is wrong the error must
point at the file and line.  ``load`` returns the data and a map from each
key path (``("nodes", 2, "host")``) to its line, and ``describe_errors``
turns a pydantic ValidationError into lines like
``inv.yaml:14: nodes[2].host: ...``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

__all__ = ["MissingFile", "SourceError", "load", "loads", "describe_errors", "path_text", "suggest"]

Loc = tuple[Any, ...]


class SourceError(Exception):
    """A user-written file is wrong; the message names the file, line and field and says what to do."""


class MissingFile(SourceError):
    """The file named is not there; ``path`` is the one looked for, so a caller can name its option."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"{path}: no such file")
        self.path = path


def _problem(exc: yaml.MarkedYAMLError) -> str:
    problem = str(exc.problem or exc)
    if "'\\t'" in problem or "\t" in problem:
        # PyYAML says "found character '\t' that cannot start any token": the fix is the point.
        return "a tab where YAML needs spaces; indent with spaces, not tabs"
    return problem


class _LineLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *defaults` merges; construct_mapping below flattens it
        if not isinstance(key_node, yaml.ScalarNode):
            raise yaml.constructor.ConstructorError(
                None, None, "a key must be a plain word, not a list or mapping", key_node.start_mark
            )
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _index_lines(node: yaml.Node, loc: Loc, lines: dict[Loc, int]) -> None:
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[loc + (key,)] = key_node.start_mark.line + 1
            _index_lines(value_node, loc + (key,), lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[loc + (index,)] = item.start_mark.line + 1
            _index_lines(item, loc + (index,), lines)


_STR_TAG = "tag:yaml.org,2002:str"


def _keep_text(node: yaml.Node, loc: Loc, as_written: Callable[[Loc], bool], seen: set[int]) -> None:
    """Tag the plain scalars at the key paths ``as_written`` names (and their keys) as strings."""
    if id(node) in seen:  # an alias: done where its anchor is
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = loc + (key_node.value,)
            if as_written(child):
                for scalar in (key_node, value_node):
                    if isinstance(scalar, yaml.ScalarNode) and scalar.style is None:
                        scalar.tag = _STR_TAG
            _keep_text(value_node, child, as_written, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _keep_text(item, loc + (index,), as_written, seen)


def loads(text: str, source: str, as_written: Callable[[Loc], bool] | None = None) -> tuple[Any, dict[Loc, int]]:
    """Parse YAML ``text`` (named ``source`` in errors); return (data, line map).

    A plain scalar at a key path ``as_written`` accepts (and its key) stays the text written:
    YAML 1.1, which PyYAML reads, would make a label ``leaf: 010`` the octal 8 and ``leaf: no``
    False, where the user wrote a name.
    """
    loader = _LineLoader(text)
    try:
        tree = loader.get_single_node()
        if tree is not None and as_written is not None:
            _keep_text(tree, (), as_written, set())
        data = loader.construct_document(tree) if tree is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise SourceError(f"{source}{line}: not valid YAML: {_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise SourceError(f"{source}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    lines: dict[Loc, int] = {}
    if tree is not None:
        try:
            _index_lines(tree, (), lines)
        except RecursionError:  # `a: &x [*x]`: an alias inside what it names
            raise SourceError(f"{source}: not valid here: an alias (*name) refers to a list or mapping that contains it") from None
    return data, lines


def load(path: Path, as_written: Callable[[Loc], bool] | None = None) -> tuple[Any, dict[Loc, int]]:
    """Read and parse a YAML file (``as_written``: see :func:`loads`); unreadable files raise
    SourceError naming the path."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingFile(path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"{path}: cannot read: {exc}") from None
    return loads(text, str(path), as_written)


def path_text(loc: Iterable[Any]) -> str:
    """``("nodes", 2, "host")`` -> ``nodes[2].host``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def line_of(lines: dict[Loc, int], loc: Loc) -> int | None:
    """The line of ``loc`` or of its nearest written parent."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


def suggest(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def describe_errors(
    source: str,
    exc: ValidationError,
    lines: dict[Loc, int],
    *,
    known_fields: Any = None,
    loc_prefix: Loc = (),
) -> str:
    """Render a ValidationError as ``file:line: field: problem`` lines.

    ``known_fields(loc) -> list[str]`` lets the caller suggest a correction for
    an unknown key (``tcp_througput`` -> ``tcp_throughput``).
    """
    out = []
    for error in exc.errors():
        # pydantic puts the tag of a union member in loc (e.g. 'function-after[...]'); drop those.
        loc = loc_prefix + tuple(p for p in error["loc"] if not (isinstance(p, str) and ("[" in p and "]" in p)))
        line = line_of(lines, loc)
        where = f"{source}:{line}" if line else source
        message = error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if error["type"] == "extra_forbidden":
            hint = ""
            if known_fields is not None and loc:
                hint = suggest(str(loc[-1]), known_fields(loc[:-1]))
            message = f"unknown key{hint}"
        elif error["type"] == "missing":
            message = "required but missing"
        elif error["type"] in ("model_type", "dict_type"):
            message = f"write a mapping (key: value), not {error['input']!r}"
        out.append(f"{where}: {path_text(loc)}: {message}")
    return "\n".join(out)
