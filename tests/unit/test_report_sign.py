"""Records signed with SSH keys (ssh-keygen -Y sign) and checked against an allowed_signers file."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_fabric.report import verify
from pytest_fabric.report.sign import check_signatures, sign, signature_files

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) not installed")


def key(tmp_path: Path, who: str) -> Path:
    path = tmp_path / who
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", str(path)], check=True)
    return path


def allowed(tmp_path: Path, *keys: Path) -> Path:
    lines = [f"{k.name} {' '.join(Path(str(k) + '.pub').read_text().split()[:2])}" for k in keys]
    path = tmp_path / "allowed_signers"
    path.write_text("\n".join(lines) + "\n")
    return path


def sealed(tmp_path: Path) -> Path:
    record = {"run": {"verdict": "accept"}, "checks": []}
    record["sha256"] = verify.record_sha256(record)
    path = tmp_path / "record.json"
    path.write_text(verify.canonical_json(record) + "\n")
    return path


def test_provider_and_tenant_each_sign_and_both_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider, tenant = key(tmp_path, "provider@example.com"), key(tmp_path, "tenant@example.com")
    record = sealed(tmp_path)
    assert sign(record, provider).name == "record.json.sig"
    assert sign(record, tenant).name == "record.json.2.sig"
    assert [p.name for p in signature_files(record)] == ["record.json.sig", "record.json.2.sig"]
    signers = allowed(tmp_path, provider, tenant)
    checks = check_signatures(record, signers)
    assert [(c.ok, c.principal) for c in checks] == [(True, "provider@example.com"), (True, "tenant@example.com")]
    assert verify.main(["--signers", str(signers), str(record)]) == 0
    out = capsys.readouterr().out
    assert "record.json.sig: GOOD: signed by provider@example.com (ED25519 key SHA256:" in out, out


def test_an_edited_record_or_an_unknown_key_does_not_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider, stranger = key(tmp_path, "provider@example.com"), key(tmp_path, "stranger@example.com")
    record = sealed(tmp_path)
    sign(record, provider)
    sign(record, stranger)
    signers = allowed(tmp_path, provider)
    record.write_text(record.read_text() + " ")  # the seal still holds (whitespace), the signed bytes do not
    checks = check_signatures(record, signers)
    assert not checks[0].ok and "the record changed after it was signed" in checks[0].message
    assert not checks[1].ok and "does not list" in checks[1].message
    assert verify.main(["--signers", str(signers), str(record)]) == 1
    unsigned = tmp_path / "other" / "record.json"
    unsigned.parent.mkdir()
    shutil.copy(sealed(tmp_path), unsigned)
    assert verify.main(["--signers", str(signers), str(unsigned)]) == 2
    assert "NOT SIGNED" in capsys.readouterr().out
