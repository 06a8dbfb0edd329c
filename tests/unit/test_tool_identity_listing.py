"""probes/tool_identity.py's listing run here against the real dpkg: one ``dpkg -S`` for every path,
one verification per package, and the package each tool's own ``dpkg -S`` names (its first line)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_fabric.parsers.tool_identity import parse
from pytest_fabric.probes.tool_identity import identity_command

DPKG = shutil.which("dpkg")
pytestmark = pytest.mark.skipif(DPKG is None, reason="no dpkg on this machine")


def _listing(tmp_path: Path, tools: list[str], path: str) -> tuple[str, list[str]]:
    """The listing's text and every dpkg command line it ran (a logging dpkg first on PATH runs the real one)."""
    shim, log = tmp_path / "shim", tmp_path / "dpkg.log"
    shim.mkdir(exist_ok=True)
    (shim / "dpkg").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec {DPKG} "$@"\n')
    (shim / "dpkg").chmod(0o755)
    log.write_text("")
    done = subprocess.run(["sh", "-c", identity_command(tools)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{shim}:{path}"})
    assert done.returncode == 0, done.stderr
    return done.stdout, log.read_text().splitlines()


def _own_owner(path: str) -> str | None:
    """What one ``dpkg -S PATH`` says first, cut as the listing cuts it ("pkg1, pkg2: path" -> pkg1)."""
    first = subprocess.run([str(DPKG), "-S", "--", path], capture_output=True, text=True).stdout.partition("\n")[0]
    return first.split(": ")[0].split(",")[0] or None


def _expected(tools: list[str], path: str) -> dict[str, str | None]:
    found = {}
    for tool in tools:
        on_path = shutil.which(tool, path=path)
        if on_path is not None:
            found[tool] = _own_owner(os.path.realpath(on_path)) or _own_owner(on_path)
    return found


def _unowned_script(tmp_path: Path) -> Path:
    own = tmp_path / "bin"
    own.mkdir()
    (own / "standin").write_text("#!/bin/sh\n")
    (own / "standin").chmod(0o755)
    return own


def test_one_search_for_every_path_and_one_verification_per_package(tmp_path: Path) -> None:
    path = f"{_unowned_script(tmp_path)}:/bin:/usr/bin"
    tools = ["ls", "cat", "cp", "mv", "dpkg-query", "standin", "no-such-tool-here"]
    text, calls = _listing(tmp_path, tools, path)
    listed = parse(text)
    expected = _expected(tools, path)
    assert {t: listed.tools[t].package for t in expected} == expected
    assert listed.tools["standin"].package is None and listed.tools["no-such-tool-here"].missing
    packages = {p for p in expected.values() if p is not None}
    assert packages, "no tool here is owned by a package: nothing would be verified"
    assert len([c for c in calls if c.startswith("-S")]) == 1, calls
    assert sorted(c.removeprefix("--verify -- ") for c in calls if c.startswith("--verify")) == sorted(packages)


def test_a_diverted_path_is_read_as_its_own_dpkg_search_reads_it(tmp_path: Path) -> None:
    # dash diverts /bin/sh (Debian, Ubuntu): dpkg -S prints "diversion by dash from: /bin/sh" lines
    # there, so the one search cannot stand for each path's own; each is searched alone, as before
    if not _own_owner("/bin/sh") or not (_own_owner("/bin/sh") or "").startswith("diversion"):
        pytest.skip("/bin/sh is not diverted here")
    path = "/bin:/usr/bin"
    tools = ["sh", "ls", "cat"]
    text, calls = _listing(tmp_path, tools, path)
    listed = parse(text)
    assert {t: listed.tools[t].package for t in tools} == _expected(tools, path)
    assert len([c for c in calls if c.startswith("-S")]) > 1
