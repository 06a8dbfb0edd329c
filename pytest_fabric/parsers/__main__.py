"""``python -m pytest_fabric.parsers TOOL FILE``: print a capture parsed, as JSON.

``FILE`` may be ``-`` for standard input.  ``--list`` names every registered
tool.  A parse error prints its message on stderr and exits 2, so a person can
check a capture from a cluster before filing it as a bug or a test fixture.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import json
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_fabric.config.units import Quantity
from pytest_fabric.parsers.base import ParseError, registry

__all__ = ["to_jsonable", "main"]


def to_jsonable(value: Any) -> Any:
    """``value`` as plain JSON types: dataclasses and pydantic models become dicts,
    Decimals become strings (exact; the unit is in the field name) and Quantities
    their text with its unit (``"200 Gb/s"``).  Dicts keyed by pairs (a link matrix)
    become nested objects, ``{"GPU0": {"GPU1": ...}}``; see :func:`_object`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Quantity):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):  # pydantic v2 model; its own serializers know its Quantity fields
        return to_jsonable(model_dump(mode="json"))
    if isinstance(value, dict):
        return _object(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(item) for item in value]
    return str(value)


def _key(key: Any) -> str:
    """A JSON object key: the text of a name or number (``GPU0``, ``99.0``), never a Python repr."""
    if isinstance(key, tuple):
        return ",".join(_key(part) for part in key)
    plain = to_jsonable(key)
    return plain if isinstance(plain, str) else json.dumps(plain)


def _object(value: dict[Any, Any]) -> dict[str, Any]:
    """A dict as a JSON object.

    Keys that are pairs (``("GPU0", "GPU1")``, a matrix cell) nest, one level per part,
    so jq reads ``.links.GPU0.GPU1``; tuple keys of unequal lengths, which cannot nest
    without a clash, are joined with commas (``"GPU0,GPU1"``).
    """
    lengths = {len(k) if isinstance(k, tuple) else 0 for k in value}
    if len(lengths) == 1 and (length := lengths.pop()) >= 2:
        nested: dict[str, Any] = {}
        for key, item in value.items():
            level = nested
            for part in key[: length - 1]:
                level = level.setdefault(_key(part), {})
            level[_key(key[-1])] = to_jsonable(item)
        return nested
    return {_key(k): to_jsonable(v) for k, v in value.items()}


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m pytest_fabric.parsers",
        description="Parse a recorded tool output and print the result as JSON.",
    )
    parser.add_argument("tool", nargs="?", help="tool name (see --list)")
    parser.add_argument("file", nargs="?", help="the captured output, or - for standard input")
    parser.add_argument("--list", action="store_true", help="list the registered tools and exit")
    args = parser.parse_args(argv)
    parsers = registry()
    if args.list:
        width = max((len(name) for name in parsers), default=0)
        for name, entry in parsers.items():
            print(f"{name:<{width}}  {entry.description}")
        return 0
    if not args.tool or not args.file:
        parser.print_usage(sys.stderr)
        print("error: give TOOL and FILE (or --list)", file=sys.stderr)
        return 2
    if args.tool not in parsers:
        print(f"unknown tool {args.tool!r}; known tools: {', '.join(parsers)}", file=sys.stderr)
        return 2
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        print(f"cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    text = data.decode("utf-8", errors="replace")
    try:
        result = parsers[args.tool].function(text)
    except ParseError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    try:
        sys.stdout.write(json.dumps(to_jsonable(result), indent=2) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # `... | head` closed the pipe: not an error of ours; keep Python from
        # complaining again when it flushes stdout at exit.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    return 0


if __name__ == "__main__":
    sys.exit(main())
