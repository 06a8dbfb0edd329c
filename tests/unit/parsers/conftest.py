"""Where the recorded tool outputs (shared/corpus) are, for the parser tests.

``FABRIC_CORPUS`` points elsewhere; the default is ``shared/corpus`` beside the
repository.  Tests that need it skip, with the path in the reason, when it is
absent (a checkout without the shared folder).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from unit.parsers.corpus import UNREAD, corpus_root

REPO = Path(__file__).resolve().parents[3]
DATA = REPO / "tests" / "data"


def corpus_files() -> list[Path]:
    """Every recorded output in the corpus that a parser reads (SOURCES.md is its index, not an
    output; the folders in ``UNREAD`` are tools no check runs)."""
    root = corpus_root()
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*")
                  if p.is_file() and p.name != "SOURCES.md" and p.relative_to(root).parts[0] not in UNREAD)


@pytest.fixture(scope="session")
def corpus_location() -> Path:
    """Where the corpus should be, whether or not it is there (for tests with fallbacks)."""
    return corpus_root()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The corpus folder; skips the test when it is absent."""
    root = corpus_root()
    if not root.is_dir():
        pytest.skip(f"tool-output corpus not found at {root} (set FABRIC_CORPUS)")
    return root


@pytest.fixture(scope="session")
def corpus_text(corpus: Path) -> Callable[[str], str]:
    """``corpus_text("ibstat/file.txt")``: a corpus file's text; skips if that file is missing."""

    def read(relative: str) -> str:
        path = corpus / relative
        if not path.is_file():
            pytest.skip(f"corpus file {path} not present")
        return path.read_text(encoding="utf-8", errors="replace")

    return read


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # One test per corpus file, named by its path, for tests that ask for `corpus_file`.
    if "corpus_file" in metafunc.fixturenames:
        root = corpus_root()
        files = corpus_files()
        if files:
            metafunc.parametrize("corpus_file", files, ids=[p.relative_to(root).as_posix() for p in files])
        else:
            metafunc.parametrize(
                "corpus_file",
                [pytest.param(None, marks=pytest.mark.skip(reason=f"tool-output corpus not found at {root}"))],
                ids=["no-corpus"],
            )
