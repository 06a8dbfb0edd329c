"""--sign KEY on a real run: the sealed record is signed when the run ends, the HTML names the key."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_fabric.report import verify

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) not installed")


def test_run_signs_its_record(pytester: pytest.Pytester, tmp_path: Path) -> None:
    key = tmp_path / "provider"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "provider@example.com", "-f", str(key)], check=True)
    record, page = pytester.path / "record.json", pytester.path / "report.html"
    result = pytester.runpytest_subprocess(
        "--cluster", "local", "--profile", "localhost", "-p", "no:cacheprovider", "-m", "software",
        f"--conformance-json={record}", "--sign", str(key), f"--html={page}", "--self-contained-html", timeout=120,
    )
    result.stdout.fnmatch_lines(["fabric: record.json signed with 256 SHA256:* provider@example.com (ED25519): *record.json.sig"])
    signers = tmp_path / "allowed_signers"
    signers.write_text("provider@example.com " + " ".join(Path(f"{key}.pub").read_text().split()[:2]) + "\n")
    assert verify.main(["--signers", str(signers), str(record)]) == 0
    assert "signed with SSH key 256 SHA256:" in page.read_text()


def test_sign_needs_a_record(pytester: pytest.Pytester, tmp_path: Path) -> None:
    result = pytester.runpytest_subprocess("--cluster", "local", "--profile", "localhost", "--sign", str(tmp_path / "nokey"))
    result.stderr.fnmatch_lines(["*--sign KEY signs the conformance record: give --conformance-json PATH too*"])
