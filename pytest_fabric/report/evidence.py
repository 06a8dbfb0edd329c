"""``--evidence-dir``: the raw outputs of every command, as files named by their SHA-256.

The JSON record keeps what settles a dispute in little space: each command, the
node it ran on, its exit code, duration and the SHA-256 of its stdout and
stderr.  The outputs themselves go to this directory, one file per distinct
output (identical outputs are stored once), referenced from the record as
``stdout_file`` / ``stderr_file`` relative to the record's directory.  The
plugin keeps at most the last 16 KiB of an output; when that tail is all we
have, the item says ``stdout_file_truncated: true`` and the file's name is the
hash of the tail, so ``sha256sum`` of every file still matches its name.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = ["EVIDENCE_DIR_KEY", "slim_evidence", "write_output"]

EVIDENCE_DIR_KEY = pytest.StashKey[Path]()
# Fields of an evidence item that stay in the record; the outputs themselves do not.
_KEEP = ("node", "command", "exit_code", "duration_s", "stdout_sha256", "stderr_sha256")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabric")
    group.addoption(
        "--evidence-dir",
        metavar="DIR",
        default=None,
        help="write every command's raw stdout/stderr to DIR, one file per output named by its sha256, "
        "referenced from the --conformance-json record.",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("evidence_dir", None)
    if path and not hasattr(config, "workerinput"):
        directory = Path(path).expanduser().resolve()
        directory.mkdir(parents=True, exist_ok=True)
        config.stash[EVIDENCE_DIR_KEY] = directory
        record = config.getoption("conformance_json", None)
        folder = Path(record).expanduser().resolve().parent if record else None
        if folder is not None and not directory.is_relative_to(folder):
            # verify reads evidence only from one folder inside the record's (it treats the record as
            # hostile: docs/signing.md), so say it now rather than when the other party cannot check it.
            config.issue_config_time_warning(pytest.PytestConfigWarning(
                f"--evidence-dir {path} is outside the folder of --conformance-json {record} ({folder}): "
                "verify will not read that evidence; give a folder inside it "
                f"(--evidence-dir {Path(record).parent / 'evidence'})"), stacklevel=2)


def write_output(directory: Path, text: str) -> str:
    """Store ``text`` as ``<sha256>.txt`` in ``directory`` (once) and return the file name."""
    data = text.encode("utf-8", errors="surrogateescape")
    name = hashlib.sha256(data).hexdigest() + ".txt"
    target = directory / name
    if not target.exists():
        tmp = directory / f".{name}.{os.getpid()}.tmp"
        tmp.write_bytes(data)
        os.replace(tmp, target)  # never a half-written file under a hash name
    return name


def slim_evidence(
    items: Iterable[Mapping[str, Any]], directory: Path | None = None, relative_to: Path | None = None
) -> list[dict[str, Any]]:
    """Evidence items without their outputs; with ``directory``, outputs written there and referenced."""
    out = []
    for item in items:
        slim = {k: item.get(k) for k in _KEEP}
        if directory is not None:
            for stream in ("stdout", "stderr"):
                text = item.get(stream)
                if not text:
                    continue
                name = write_output(directory, str(text))
                path = directory / name
                try:
                    ref = os.path.relpath(path, relative_to) if relative_to else str(path)
                except ValueError:  # another drive on Windows
                    ref = str(path)
                slim[f"{stream}_file"] = ref.replace(os.sep, "/")
                full_hash = item.get(f"{stream}_sha256")
                slim[f"{stream}_file_truncated"] = bool(full_hash) and Path(name).stem != full_hash
        out.append(slim)
    return out
