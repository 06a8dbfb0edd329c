"""Every registered parser, fed broken input: only ParseError may escape, and it names the tool.

Inputs are built from the parser's own corpus files (or its tests/data samples
when the corpus is absent): truncated at any point, lines shuffled, characters
replaced, lines from other tools mixed in, and plain random text.  Parsers come
from ``registry()``, so a new parser module is fuzzed without editing this file.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_fabric.parsers.base import ParseError, Parser, registry

DATA = Path(__file__).resolve().parents[2] / "data"
PARSERS = registry()
FUZZ = settings(
    max_examples=30,
    deadline=None,
    database=None,  # no .hypothesis folder in a shared working tree
    derandomize=True,  # CI must be repeatable; run with --hypothesis-seed to explore further
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)
# Characters that sit at the joints of tool output: separators, digits, brackets, signs.
JOINTS = "0123456789abcdefxX:.,;=()[]<>{}\"'/-+ \t\n%#|\\"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


@cache
def samples(tool: str, root: Path) -> tuple[str, ...]:
    """The recorded outputs this parser claims under ``root``, plus our own samples for it."""
    parser = PARSERS[tool]
    paths: list[Path] = []
    for entry in parser.corpus_dirs:
        target = root / entry
        if target.is_file():
            paths.append(target)
        elif target.is_dir():
            paths.extend(sorted(p for p in target.iterdir() if p.is_file()))
    for folder in dict.fromkeys((tool, *parser.corpus_dirs)):
        local = DATA / folder
        if local.is_dir():
            paths.extend(sorted(p for p in local.iterdir() if p.is_file()))
    return tuple(dict.fromkeys(_read(p) for p in paths))


@cache
def foreign_lines(root: Path) -> tuple[str, ...]:
    """A few lines of every tool's samples, to splice into another tool's output."""
    lines: list[str] = []
    for tool in PARSERS:
        for text in samples(tool, root):
            lines.extend(text.splitlines()[:40])
    return tuple(lines) or ("",)


def check(parser: Parser, text: str) -> None:
    __tracebackhide__ = True
    try:
        parser.function(text)
    except ParseError as exc:
        message = str(exc)
        assert message.strip(), f"{parser.tool}: empty ParseError message"
        assert parser.tool in message, f"{parser.tool}: ParseError message does not name the tool: {message!r}"


def _sample(data: st.DataObject, tool: str, root: Path) -> str:
    texts = samples(tool, root)
    if not texts:
        pytest.skip(f"no corpus files or tests/data samples for {tool}")
    return data.draw(st.sampled_from(texts), label="sample")


TOOLS = sorted(PARSERS)


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(data=st.data())
def test_truncated(tool: str, corpus_location: Path, data: st.DataObject) -> None:
    text = _sample(data, tool, corpus_location)
    cut = data.draw(st.integers(0, len(text)), label="cut")
    check(PARSERS[tool], text[:cut])


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(data=st.data())
def test_lines_shuffled(tool: str, corpus_location: Path, data: st.DataObject) -> None:
    lines = _sample(data, tool, corpus_location).splitlines(keepends=True)
    rng = data.draw(st.randoms(use_true_random=False), label="rng")
    rng.shuffle(lines)
    keep = data.draw(st.integers(0, len(lines)), label="keep")
    check(PARSERS[tool], "".join(lines[:keep] if keep else lines))


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(data=st.data())
def test_characters_replaced(tool: str, corpus_location: Path, data: st.DataObject) -> None:
    chars = list(_sample(data, tool, corpus_location))
    if not chars:
        return
    rng: random.Random = data.draw(st.randoms(use_true_random=False), label="rng")
    for _ in range(data.draw(st.integers(1, 40), label="edits")):
        chars[rng.randrange(len(chars))] = rng.choice(JOINTS)
    check(PARSERS[tool], "".join(chars))


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(data=st.data())
def test_foreign_lines_spliced(tool: str, corpus_location: Path, data: st.DataObject) -> None:
    lines = _sample(data, tool, corpus_location).splitlines(keepends=True)
    extra = data.draw(st.lists(st.sampled_from(foreign_lines(corpus_location)), min_size=1, max_size=8), label="foreign")
    rng = data.draw(st.randoms(use_true_random=False), label="rng")
    for line in extra:
        lines.insert(rng.randint(0, len(lines)), line + "\n")
    check(PARSERS[tool], "".join(lines))


@pytest.mark.parametrize("tool", TOOLS)
@FUZZ
@given(text=st.one_of(st.text(max_size=400), st.text(alphabet=JOINTS, max_size=400), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_garbage(tool: str, text: str) -> None:
    check(PARSERS[tool], text)
