"""The README and docs/: every relative link resolves, the README stays a front page and links every page.

Links are Markdown inline links, ``[text](path)`` or ``[text](path#anchor)`` (images too); a link
to a web address (``http:``, ``https:``), ``mailto:``, or an anchor of the same page (``#...``) is
not a file and is not checked. Code (fenced blocks and inline backticks) is left out, so an
example of a link inside code is not taken for one. The checkout's files are read; an installed
copy run from elsewhere has no README beside it, and the tests skip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
README_MAX_LINES = 220

# [text](target) or [text](target "title"); the text may hold one level of brackets (an image
# inside a link).  The target stops at whitespace or the closing parenthesis.
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^(```|~~~)")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
NOT_FILES = ("http://", "https://", "mailto:")


def _require_checkout() -> None:
    if not README.is_file():
        pytest.skip(f"no README.md at {REPO}: not a checkout (an installed copy run from elsewhere)")


def pages() -> list[Path]:
    """README.md and every docs/*.md of the checkout."""
    return [README, *sorted(DOCS.glob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced code blocks and inline code spans (line count kept)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            fenced = not fenced
            lines.append("")
            continue
        lines.append("" if fenced else INLINE_CODE.sub("", line))
    return "\n".join(lines)


def links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every inline link of a page, outside code."""
    found = []
    for number, line in enumerate(prose(page.read_text(encoding="utf-8")).splitlines(), start=1):
        found += [(number, target) for target in _targets(line)]
    return found


def _targets(text: str) -> list[str]:
    """Link targets in a line, a link's own text included (an image inside a link: a badge)."""
    out = []
    for match in LINK.finditer(text):
        out += [*_targets(match.group(1)), match.group(2)]
    return out


def relative_file_links(page: Path) -> list[tuple[int, str, Path]]:
    """(line, target, path it names) of the links that name a file relative to the page."""
    out = []
    for number, target in links(page):
        if target.startswith(NOT_FILES) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0].split("?", 1)[0]
        out.append((number, target, (page.parent / path).resolve()))
    return out


def broken_links(page: Path) -> list[str]:
    """``page:line: target`` for every relative link that names no existing file or folder of the repository."""
    return [
        f"{page.relative_to(REPO)}:{number}: {target}"
        for number, target, path in relative_file_links(page)
        if not path.exists() or not path.is_relative_to(REPO)  # outside it, a reader of the repository has nothing
    ]


def test_the_docs_are_there() -> None:
    _require_checkout()
    assert DOCS.is_dir() and list(DOCS.glob("*.md")), f"no docs/*.md under {REPO}"


@pytest.mark.parametrize("name", ["README.md", *sorted(p.name for p in DOCS.glob("*.md"))])
def test_every_relative_link_resolves(name: str) -> None:
    _require_checkout()
    page = README if name == "README.md" else DOCS / name
    assert broken_links(page) == []


def test_the_readme_is_a_front_page() -> None:
    _require_checkout()
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; keep it to {README_MAX_LINES} and move the rest to docs/"


def test_the_readme_links_every_docs_page() -> None:
    _require_checkout()
    linked = {path for _, _, path in relative_file_links(README)}
    missing = [p.name for p in sorted(DOCS.glob("*.md")) if p.resolve() not in linked]
    assert missing == [], f"README.md links no docs/ page named {missing}"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    # The checker itself: a link to a missing file is reported, web links, anchors and code are not.
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("# there\n")
    page.write_text(
        "[ok](there.md) [ok too](there.md#there) [anchor](#top) [web](https://example.com/x.md)\n"
        "[mail](mailto:a@example.com) `[in code](gone-inline.md)`\n"
        "```\n[in a block](gone-block.md)\n```\n"
        "[![image](there.md)](gone.md#x)\n"
    )
    found = [(number, target) for number, target, path in relative_file_links(page) if not path.exists()]
    assert found == [(6, "gone.md#x")]
    assert [target for _, target in links(page)][-2:] == ["there.md", "gone.md#x"]
