"""The record's filesystem filling mid-run (issue 27): one clear message, the run finishes, no ``.tmp`` left.

Before, the ``OSError`` of the rewrite escaped ``pytest_runtest_logreport``: an INTERNALERROR traceback,
exit 3 (1 at the end), and the half-written ``.record.json.<pid>.tmp`` left beside the record.
A tmpfs of 64 KiB is mounted for the test (root only); a conftest fills it once the first check has
run (a plugin module, ``-p fill_after_first_check``), so the next rewrite, and the final one, meet
``No space left on device``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

LOCAL = ("--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "-k", "mtu or dns_resolve")

FILL_AFTER_FIRST_CHECK = '''
import os

filled = []


def pytest_runtest_logreport(report):
    if report.when == "call" and not filled:
        filled.append(True)
        try:
            with open(os.path.join({where!r}, "filler"), "wb", buffering=0) as f:
                while True:
                    f.write(b"x" * 4096)
        except OSError:
            pass
'''


@pytest.fixture
def small_full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs at ``tmp_path / "small"``, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where = tmp_path / "small"
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "pytest-fabric-full", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_under_the_record_is_said_once_and_the_run_finishes(
    pytester: pytest.Pytester, small_full_disk: Path
) -> None:
    pytester.makepyfile(fill_after_first_check=FILL_AFTER_FIRST_CHECK.replace("{where!r}", repr(str(small_full_disk))))
    record = small_full_disk / "record.json"
    result = pytester.runpytest_subprocess(*LOCAL, "-p", "fill_after_first_check", f"--conformance-json={record}")
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-4000:]
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), out[-4000:]
    said = [line for line in out.splitlines() if "could not write the conformance record" in line]
    assert len(said) == 1, out[-4000:]
    (line,) = said
    assert str(record) in line and "No space left on device" in line and "bytes" in line, line
    assert "--conformance-json" in line  # what to do
    assert f"conformance record: NOT written to {record}" in out, out[-4000:]
    assert [p.name for p in small_full_disk.iterdir() if p.name.endswith(".tmp")] == []
