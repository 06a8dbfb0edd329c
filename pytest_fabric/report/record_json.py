"""``--conformance-json PATH``: the machine-readable record, rewritten as results arrive.

Shape (DESIGN.md, "The JSON record"; the schema is ``record.schema.json``)::

    {"run": {...}, "checks": [{...}, ...], "sha256": "..."}

The file is replaced atomically (write a temporary file, then ``os.replace``)
after every check, so an interrupted run -- Ctrl-C, a lost controller, a killed
job -- leaves a valid, sealed record of what was measured, with
``run.status`` still ``"running"``.  Each check is serialised once, when it
arrives, and the file is assembled from those pieces, so a rewrite costs a
string join, a hash and a write rather than re-encoding every check: for
2,000 checks the whole run's rewrites take a few seconds in total (see
``tests/unit/test_report_record_json.py::test_rewrites_stay_cheap``).
Rewrites closer together than :data:`MIN_INTERVAL_S` are deferred to the next
check or the end of the session, so bursts of skipped checks cost nothing.
"""

from __future__ import annotations

import hashlib
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ..runinfo import RunInfo, get_run_info, utc_now
from .collect import CHECKS_KEY, is_controller, record_of
from .summary import outcome_counts, run_verdict, tool_versions
from .verify import canonical_json

__all__ = ["SCHEMA_VERSION", "RecordWriter", "WRITER_KEY", "build_run"]

SCHEMA_VERSION = 1
MIN_INTERVAL_S = 0.2


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("fabric")
    group.addoption(
        "--conformance-json",
        metavar="PATH",
        default=None,
        help="write the machine-readable conformance record (run, checks, sha256) to PATH, "
        "updated after every check.",
    )


def build_run(
    info: RunInfo, checks: Sequence[dict[str, Any]], *, status: str, compared_with: str | None = None,
    evidence_dir: str | None = None, finished: str | None = None,
) -> dict[str, Any]:
    """The ``run`` object: what was tested against what, when, with which versions, and the verdict."""
    return {
        "schema_version": SCHEMA_VERSION,
        "cluster": info.cluster_name,
        "inventory": info.inventory_path,
        "profile": info.profile_name,
        "profile_path": info.profile_path,
        "profile_sha256": info.profile_sha256,
        "profile_extends": list(info.profile_extends),
        "profile_description": info.profile_description,
        "overrides": list(info.overrides),
        "nodes": list(info.nodes),
        "node_count": len(info.nodes),
        "node_labels": {n: dict(v) for n, v in info.node_labels.items()},
        "started": info.started,
        "finished": finished or info.finished,
        "status": status,
        "verdict": run_verdict(checks),
        "counts": outcome_counts(checks),
        "pytest_fabric_version": info.pytest_fabric_version,
        "pytest_version": pytest.__version__,
        "python_version": platform.python_version(),
        "controller": info.controller,
        "tool_versions": tool_versions(checks),
        "compared_with": compared_with,
        "evidence_dir": evidence_dir,
    }


class RecordWriter:
    """Keeps each check's canonical JSON and rewrites the record file from those pieces."""

    def __init__(self, path: Path, info: RunInfo, config: pytest.Config) -> None:
        self.path = path
        self.info = info
        self.config = config
        self._pieces: dict[str, str] = {}  # nodeid -> canonical JSON of the check
        self._last_write = 0.0
        self._dirty = False

    def _run(self, status: str, finished: str | None = None) -> dict[str, Any]:
        cmp = self.config.getoption("compare", None)
        ev = self.config.getoption("evidence_dir", None)
        return build_run(
            self.info, list(self.config.stash.get(CHECKS_KEY, {}).values()), status=status,
            compared_with=str(cmp) if cmp else None, evidence_dir=str(ev) if ev else None, finished=finished,
        )

    def add(self, nodeid: str, check: dict[str, Any]) -> None:
        """Take in one check; rewrite the file unless the last rewrite was a moment ago."""
        self._pieces.pop(nodeid, None)
        self._pieces[nodeid] = canonical_json(check)
        self._dirty = True
        if time.monotonic() - self._last_write >= MIN_INTERVAL_S:
            self.write("running")

    @pytest.hookimpl(trylast=True)  # after the collector stored the check
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        check = self.config.stash.get(CHECKS_KEY, {}).get(report.nodeid)
        if check is not None and record_of(report) is not None:
            self.add(report.nodeid, check)

    def write(self, status: str, finished: str | None = None) -> None:
        """Write the record now: canonical pieces joined, sealed with the sha256, replaced atomically."""
        run = canonical_json(self._run(status, finished))
        pieces = list(self._pieces.values())
        # Byte for byte what canonical_json({"checks": ..., "run": ...}) gives (keys sorted, compact),
        # so verify.record_sha256 of the loaded file reproduces this hash.
        body = '{"checks":[' + ",".join(pieces) + '],"run":' + run + "}"
        digest = hashlib.sha256(body.encode("ascii")).hexdigest()
        # One check per line: still one valid JSON document, and diffable and greppable.
        text = '{"run":' + run + ',\n"checks":[\n' + ",\n".join(pieces) + '\n],\n"sha256":"' + digest + '"}\n'
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="ascii")
        os.replace(tmp, self.path)
        self._last_write = time.monotonic()
        self._dirty = False


WRITER_KEY = pytest.StashKey[RecordWriter]()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    path = config.getoption("conformance_json", None)
    info = get_run_info(config)
    if not path or info is None or not is_controller(config):
        return
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    writer = RecordWriter(target, info, config)
    config.stash[WRITER_KEY] = writer
    config.pluginmanager.register(writer, "fabric-report-json")
    writer.write("running")  # a record exists from the start, even if the first check never ends


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    writer = session.config.stash.get(WRITER_KEY, None)
    if writer is None:
        return
    interrupted = exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail
    writer.write("interrupted" if interrupted else "complete", finished=utc_now())
