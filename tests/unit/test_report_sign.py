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


PROVIDER, TENANT = "provider@example.com", "tenant@example.com"
BOTH = ["--require", PROVIDER, "--require", TENANT]


def test_require_names_the_party_that_has_not_signed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider, tenant = key(tmp_path, PROVIDER), key(tmp_path, TENANT)
    record = sealed(tmp_path)
    sign(record, provider)
    signers = allowed(tmp_path, provider, tenant)
    assert verify.main(["--signers", str(signers), *BOTH, str(record)]) == 2
    out = capsys.readouterr().out
    assert f"NOT SIGNED by {TENANT}: no signature by a key {signers} lists for {TENANT}" in out, out
    assert f"python -m pytest_fabric.report.sign {record} KEY" in out, out
    assert f"NOT SIGNED by {PROVIDER}" not in out and f"signed by {PROVIDER} (record.json.sig" in out, out
    # Without --require one party's signature is still all the file asks for.
    assert verify.main(["--signers", str(signers), str(record)]) == 0


def test_require_passes_when_both_parties_signed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider, tenant = key(tmp_path, PROVIDER), key(tmp_path, TENANT)
    record = sealed(tmp_path)
    sign(record, provider)
    sign(record, tenant)
    signers = allowed(tmp_path, provider, tenant)
    assert verify.main(["--signers", str(signers), *BOTH, str(record)]) == 0
    out = capsys.readouterr().out
    assert "NOT SIGNED" not in out, out
    assert f"signed by {PROVIDER} (record.json.sig" in out and f"signed by {TENANT} (record.json.2.sig" in out, out


def test_one_key_signing_twice_is_one_signer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider, tenant = key(tmp_path, PROVIDER), key(tmp_path, TENANT)
    record = sealed(tmp_path)
    sign(record, provider)
    sign(record, provider)  # record.json.2.sig: the same key again
    signers = allowed(tmp_path, provider, tenant)
    checks = check_signatures(record, signers)
    assert [c.same_key_as for c in checks] == [None, record.with_name("record.json.sig")]
    assert checks[0].key == checks[1].key and str(checks[0].key).startswith("ED25519 key SHA256:")
    assert verify.main(["--signers", str(signers), str(record)]) == 0
    out = capsys.readouterr().out
    assert out.count("GOOD") == 1, out  # said once
    assert "record.json.2.sig: same key as record.json.sig (provider@example.com): one signer, counted once" in out, out
    assert verify.main(["--signers", str(signers), *BOTH, str(record)]) == 2
    assert f"NOT SIGNED by {TENANT}" in capsys.readouterr().out


def test_a_key_listed_for_both_principals_counts_for_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    provider = key(tmp_path, PROVIDER)
    record = sealed(tmp_path)
    sign(record, provider)
    line = " ".join(Path(f"{provider}.pub").read_text().split()[:2])
    signers = tmp_path / "allowed_signers"
    signers.write_text(f"{PROVIDER} {line}\n{TENANT} {line}\n")  # one key, listed under both
    assert verify.main(["--signers", str(signers), *BOTH, str(record)]) == 2
    out = capsys.readouterr().out
    assert f"signed by {PROVIDER} (record.json.sig" in out, out
    assert (f"NOT SIGNED by {TENANT}: the only key that signed for {TENANT} (ED25519 key SHA256:" in out
            and f"is {PROVIDER}'s key too, and one key counts once: it counts for {PROVIDER}" in out), out
    # A second key for the tenant, listed under the tenant only: each principal now has a key of its own.
    tenant = key(tmp_path, TENANT)
    sign(record, tenant)
    signers.write_text(signers.read_text() + f"{TENANT} {' '.join(Path(f'{tenant}.pub').read_text().split()[:2])}\n")
    assert verify.main(["--signers", str(signers), *BOTH, str(record)]) == 0, capsys.readouterr().out


def test_require_needs_signers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert verify.main(["--require", PROVIDER, str(sealed(tmp_path))]) == 2
    assert "--require needs --signers ALLOWED_SIGNERS" in capsys.readouterr().out
