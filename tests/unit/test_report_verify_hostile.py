"""``verify`` on a record someone else handed over: every field, name and byte of it is hostile.

Whoever holds the file can recompute the seal, so a sealed record proves nothing about what it names:
evidence names outside the record's evidence folder, devices, FIFOs and symbolic links are refused,
files are read with a size cap, and JSON that readers disagree on (NaN, Infinity, a key given twice)
cannot be read rather than verified.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.report import verify
from pytest_fabric.report.compare import load_record
from pytest_fabric.report.sign import check_signatures, sign

KEYGEN = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) not installed")


class Blocked(BaseException):
    """Not an OSError, so no ``pytest.raises(OSError)`` takes it for a refusal."""


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A reader that blocks on a FIFO fails the test after 20 s instead of hanging the session."""

    def stop(signum: int, frame: Any) -> None:
        raise Blocked("blocked reading a file the record names")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def sealed(folder: Path, checks: list[dict[str, Any]], run: dict[str, Any] | None = None) -> Path:
    """A record whose seal holds, as anyone who edits a record can make it."""
    record: dict[str, Any] = {"run": run or {"verdict": "accept"}, "checks": checks}
    record["sha256"] = verify.record_sha256(record)
    path = folder / "record.json"
    path.write_text(verify.canonical_json(record) + "\n")
    return path


def with_evidence(folder: Path, name: str) -> Path:
    return sealed(folder, [{"nodeid": "t::x", "evidence": [{"node": "n1", "stdout_file": name}]}])


def stored(folder: Path, data: bytes) -> str:
    """Write ``data`` as evidence does (``<sha256>.txt``) in ``folder``; its name."""
    folder.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(data).hexdigest() + ".txt"
    (folder / name).write_bytes(data)
    return name


def problems(path: Path) -> str:
    return "\n".join(verify.check_file(path).problems)


# ---------------------------------------------------------------------------------- evidence names


def test_a_device_named_as_evidence_is_refused_unread(tmp_path: Path) -> None:
    result = verify.check_file(with_evidence(tmp_path, "/dev/zero"))
    assert result.status == "cannot read"
    assert "/dev/zero" in problems(with_evidence(tmp_path, "/dev/zero")) and "<sha256>.<ext>" in result.problems[0]


def test_evidence_outside_the_records_folder_is_refused(tmp_path: Path) -> None:
    # The file's content matches its name, so only where it lies is wrong.
    outside = stored(tmp_path, b"hello\n")
    inner = tmp_path / "bundle"
    inner.mkdir()
    for name in (f"../{outside}", f"evidence/../../{outside}", str(tmp_path / outside), "../x"):
        result = verify.check_file(with_evidence(inner, name))
        assert result.status == "cannot read", (name, result)
        assert name in result.problems[0] and "outside" in result.problems[0] or "<sha256>.<ext>" in result.problems[0]


def test_evidence_in_two_folders_is_refused(tmp_path: Path) -> None:
    a, b = stored(tmp_path / "evidence", b"a\n"), stored(tmp_path / "other", b"b\n")
    record = sealed(tmp_path, [{"nodeid": "t::x", "evidence": [{"stdout_file": f"evidence/{a}", "stderr_file": f"other/{b}"}]}])
    result = verify.check_file(record)
    assert result.status == "cannot read" and "other/" in result.problems[0] and "one evidence folder" in result.problems[0]


def test_a_fifo_named_as_evidence_is_refused_without_blocking(tmp_path: Path) -> None:
    name = hashlib.sha256(b"").hexdigest() + ".txt"
    (tmp_path / "evidence").mkdir()
    os.mkfifo(tmp_path / "evidence" / name)
    result = verify.check_file(with_evidence(tmp_path, f"evidence/{name}"))
    assert result.status == "cannot read" and "not a regular file (a FIFO)" in result.problems[0]


def test_a_symlink_named_as_evidence_is_refused(tmp_path: Path) -> None:
    name = stored(tmp_path / "elsewhere", b"hello\n")
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / name).symlink_to(tmp_path / "elsewhere" / name)
    result = verify.check_file(with_evidence(tmp_path, f"evidence/{name}"))
    assert result.status == "cannot read" and "symbolic link" in result.problems[0]


def test_an_evidence_folder_that_is_a_symlink_out_of_the_bundle_is_refused(tmp_path: Path) -> None:
    name = stored(tmp_path / "elsewhere", b"hello\n")
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "evidence").symlink_to(tmp_path / "elsewhere")
    result = verify.check_file(with_evidence(tmp_path / "bundle", f"evidence/{name}"))
    assert result.status == "cannot read" and "outside" in result.problems[0]


def test_oversize_evidence_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "EVIDENCE_MAX_BYTES", 1000, raising=False)
    name = stored(tmp_path / "evidence", b"x" * 1001)
    result = verify.check_file(with_evidence(tmp_path, f"evidence/{name}"))
    assert result.status == "cannot read" and "larger than" in result.problems[0]
    small = stored(tmp_path / "evidence", b"x" * 1000)
    assert verify.check_file(with_evidence(tmp_path, f"evidence/{small}")).status == "ok"


def test_a_traceback_file_is_checked_as_evidence(tmp_path: Path) -> None:
    name = stored(tmp_path / "evidence", b"Traceback ...\n")
    record = sealed(tmp_path, [{"nodeid": "t::x", "traceback_file": f"evidence/{name}"}])
    assert verify.check_file(record).status == "ok"
    (tmp_path / "evidence" / name).write_bytes(b"edited\n")
    assert verify.check_file(record).status == "edited"


@pytest.mark.parametrize("checks", [{"a": 1}, ["x"], [{"evidence": "x"}], [{"evidence": ["x"]}],
                                    [{"evidence": [{"stdout_file": 7}]}]], ids=str)
def test_a_record_of_the_wrong_shape_cannot_be_read(tmp_path: Path, checks: Any) -> None:
    record = {"run": {}, "checks": checks}
    record["sha256"] = verify.record_sha256(record)
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    result = verify.check_file(path)
    assert result.status == "cannot read" and "checks" in result.problems[0], result


# ---------------------------------------------------------------------------------- the record itself


def test_a_record_that_is_a_device_or_a_fifo_is_refused(tmp_path: Path) -> None:
    assert verify.check_file("/dev/zero").status == "cannot read"
    assert "not a regular file" in problems(Path("/dev/zero"))
    os.mkfifo(tmp_path / "record.json")
    result = verify.check_file(tmp_path / "record.json")
    assert result.status == "cannot read" and "FIFO" in result.problems[0]


def test_an_oversize_record_is_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sealed(tmp_path, [{"nodeid": "t::x", "message": "y" * 2000}])
    monkeypatch.setattr(verify, "RECORD_MAX_BYTES", 1000, raising=False)
    result = verify.check_file(path)
    assert result.status == "cannot read" and "larger than" in result.problems[0]


@pytest.mark.parametrize("spelling", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_non_finite_figure_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str], spelling: str) -> None:
    path = tmp_path / "record.json"
    path.write_text('{"run": {"verdict": "accept"}, "checks": [{"measured": {"value": ' + spelling
                    + ', "unit": "Gb/s"}}], "sha256": "' + "0" * 64 + '"}')
    assert verify.main([str(path)]) == 2
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{path}: CANNOT READ")
    assert "checks[0].measured.value" in out and spelling.lstrip("-") in out and "EDITED" not in out


@pytest.mark.parametrize("where, text", [
    ("run.verdict", '{"run": {"verdict": "reject", "verdict": "accept"}, "checks": [], "sha256": "%s"}'),
    ("checks[0].measured.value",
     '{"run": {"verdict": "accept"}, "checks": [{"measured": {"value": 1, "value": 2}}], "sha256": "%s"}'),
    ("sha256: key", '{"run": {"verdict": "accept"}, "checks": [], "sha256": "0", "sha256": "%s"}'),
    ("run.verdict", '{"run": {"verdict": "reject", "verd\\u0069ct": "accept"}, "checks": [], "sha256": "%s"}'),
])
def test_a_key_given_twice_cannot_be_read(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, text: str) -> None:
    # Sealed over what Python reads (the last value); another reader takes the first.
    seal = verify.record_sha256(json.loads(text % ""))
    path = tmp_path / "record.json"
    path.write_text(text % seal)
    assert verify.main([str(path)]) == 2
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{path}: CANNOT READ"), out
    assert where in out and "given twice" in out


def test_deep_nesting_cannot_be_read(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    path.write_text('{"run": ' + "[" * 200_000 + "]" * 200_000 + ', "checks": [], "sha256": "0"}')
    result = verify.check_file(path)
    assert result.status == "cannot read" and "nested" in result.problems[0]


# ---------------------------------------------------------------------------------- --compare reads a record too


@pytest.mark.parametrize("text, said", [
    ('{"run": {}, "checks": [{"measured": {"value": NaN}}]}', "checks[0].measured.value"),
    ('{"run": {}, "checks": [], "checks": [{"check": "x"}]}', "given twice"),
    ('{"run": {}, "checks": ["x"]}', "checks[0]"),
])
def test_compare_refuses_what_verify_refuses(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "previous.json"
    path.write_text(text)
    with pytest.raises(pytest.UsageError, match=r"--compare .*previous.json") as caught:
        load_record(path)
    assert said in str(caught.value)


def test_compare_refuses_a_device_or_a_fifo(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match="not a regular file"):
        load_record("/dev/zero")
    os.mkfifo(tmp_path / "previous.json")
    with pytest.raises(pytest.UsageError, match="FIFO"):
        load_record(tmp_path / "previous.json")


# ---------------------------------------------------------------------------------- signatures


def key(tmp_path: Path, who: str) -> Path:
    path = tmp_path / "keys" / who
    path.parent.mkdir(exist_ok=True)
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", str(path)], check=True)
    return path


def allowed(tmp_path: Path, *keys: Path) -> Path:
    path = tmp_path / "allowed_signers"
    path.write_text("".join(f"{k.name} {' '.join(Path(str(k) + '.pub').read_text().split()[:2])}\n" for k in keys))
    return path


def verify_as_users_run_it(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``.venv/bin/python -m pytest_fabric.report.verify ...`` from outside the checkout, as docs/signing.md says."""
    return subprocess.run([sys.executable, "-m", "pytest_fabric.report.verify", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, check=False)


@KEYGEN
def test_the_first_line_says_bad_when_every_signature_is_bad(tmp_path: Path) -> None:
    provider, stranger = key(tmp_path, "provider@example.com"), key(tmp_path, "stranger@example.com")
    record = sealed(tmp_path, [])
    sign(record, stranger)
    sign(record, stranger)
    done = verify_as_users_run_it(tmp_path, "--signers", str(allowed(tmp_path, provider)), "record.json")
    first = done.stdout.splitlines()[0]
    assert done.returncode == 1 and first.startswith("record.json: BAD: "), done.stdout
    assert "sealed" in first and "0 of 2 signatures hold" in first, first
    sign(record, provider)
    done = verify_as_users_run_it(tmp_path, "--signers", str(allowed(tmp_path, provider)), "record.json")
    assert done.returncode == 1 and done.stdout.startswith("record.json: BAD: ") and "1 of 3" in done.stdout


@KEYGEN
def test_the_first_line_says_ok_only_when_the_seal_and_every_signature_hold(tmp_path: Path) -> None:
    provider, tenant = key(tmp_path, "provider@example.com"), key(tmp_path, "tenant@example.com")
    record = sealed(tmp_path, [])
    sign(record, provider)
    signers = str(allowed(tmp_path, provider, tenant))
    done = verify_as_users_run_it(tmp_path, "--signers", signers, "record.json")
    assert done.returncode == 0 and done.stdout.startswith("record.json: OK: sealed, 1 of 1 signatures hold"), done.stdout
    done = verify_as_users_run_it(tmp_path, "--signers", signers, "--require", "tenant@example.com", "record.json")
    assert done.returncode == 2 and done.stdout.startswith("record.json: NOT SIGNED: ") and "tenant@example.com" in \
        done.stdout.splitlines()[0], done.stdout
    (tmp_path / "record.json.sig").unlink()
    done = verify_as_users_run_it(tmp_path, "--signers", signers, "record.json")
    assert done.returncode == 2 and done.stdout.startswith("record.json: NOT SIGNED: "), done.stdout


@KEYGEN
def test_several_records_the_first_line_says_the_worst(tmp_path: Path) -> None:
    provider = key(tmp_path, "provider@example.com")
    good, bad = tmp_path / "a", tmp_path / "b"
    good.mkdir(), bad.mkdir()
    sign(sealed(good, []), provider)
    sealed(bad, [])
    (bad / "record.json").write_text((bad / "record.json").read_text().replace("accept", "reject"))
    done = verify_as_users_run_it(tmp_path, "--signers", str(allowed(tmp_path, provider)), "a/record.json", "b/record.json")
    assert done.returncode == 1 and done.stdout.startswith("EDITED: 1 of 2 records"), done.stdout


@KEYGEN
def test_a_signature_for_another_namespace_says_so(tmp_path: Path) -> None:
    provider = key(tmp_path, "provider@example.com")
    record = sealed(tmp_path, [])
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(provider), "-n", "git", str(record)], check=True,
                   capture_output=True)
    checks = check_signatures(record, allowed(tmp_path, provider))
    assert len(checks) == 1 and not checks[0].ok
    assert "namespace" in checks[0].message and '"git"' in checks[0].message and "changed" not in checks[0].message


@KEYGEN
def test_a_signature_file_that_is_a_device_is_refused(tmp_path: Path) -> None:
    provider = key(tmp_path, "provider@example.com")
    record = sealed(tmp_path, [])
    (tmp_path / "record.json.sig").symlink_to("/dev/zero")
    checks = check_signatures(record, allowed(tmp_path, provider))
    assert len(checks) == 1 and not checks[0].ok and "symbolic link" in checks[0].message


@KEYGEN
def test_signing_a_fifo_is_refused(tmp_path: Path) -> None:
    provider = key(tmp_path, "provider@example.com")
    os.mkfifo(tmp_path / "record.json")
    with pytest.raises(OSError, match="FIFO"):
        sign(tmp_path / "record.json", provider)
