"""Sign a sealed conformance record with SSH keys, and check who signed it.

``--sign KEY`` signs the record ``--conformance-json`` wrote, once the run has sealed it, with
``ssh-keygen -Y sign -n pytest-fabric`` (OpenSSH 8.1+; KEY is a private key, or a public key
whose private half ssh-agent holds). The signature lies beside the record: ``record.json.sig``.
The other party signs the same file with a key of their own::

    python -m pytest_fabric.report.sign record.json ~/.ssh/id_ed25519   # adds record.json.2.sig

and anyone checks every signature against an ``allowed_signers`` file as OpenSSH writes it
(``tenant@example.com ssh-ed25519 AAAA...``)::

    python -m pytest_fabric.report.verify --signers allowed_signers record.json

Two signatures by one key are one signer, said once. ``--require PRINCIPAL`` (once per party)
fails the check unless each principal signed with a key the file lists for that principal, and
one key counts for one principal only: a key listed under both the provider and the tenant
satisfies one of them, not both::

    python -m pytest_fabric.report.verify --signers allowed_signers \
        --require provider@example.com --require tenant@example.com record.json

A signature covers the file's bytes: the record's seal (its sha256) shows an edit to the
content, the signature who vouched for exactly that file. The HTML report names the key the
run signs with.
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import html
import json
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.report.untrusted import RECORD_MAX_BYTES, SIGNERS_MAX_BYTES, read_capped

__all__ = [
    "NAMESPACE", "Requirement", "SignatureCheck", "check_signatures", "fingerprint", "main", "required_signers", "sign",
    "signature_files", "signature_namespace",
]

NAMESPACE = "pytest-fabric"  # ssh-keygen -Y -n: a signature made for this purpose verifies only for it
SIGN_KEY = pytest.StashKey[tuple[Path, str]]()  # (key, its fingerprint line)
SIGNATURE_MAX_BYTES = 64 << 10  # an SSH signature is a few hundred bytes
_GOOD = re.compile(r'^Good "[^"]*" signature for (?P<principal>.+?) with (?P<key>.+)$', re.MULTILINE)


def _keygen(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["ssh-keygen", *args], input=stdin, capture_output=True, timeout=60, check=False)
    except FileNotFoundError:
        raise RuntimeError("ssh-keygen not found: install openssh-client (signing needs OpenSSH 8.1 or later)") from None


def fingerprint(key: Path) -> str:
    """``256 SHA256:... comment (ED25519)`` for a private or public key file."""
    done = _keygen("-l", "-f", str(key))
    if done.returncode != 0:
        raise ValueError(f"{key}: not an SSH key ({done.stderr.decode(errors='replace').strip()})")
    return done.stdout.decode().strip()


def signature_files(record: Path) -> list[Path]:
    """The record's signatures: ``record.json.sig``, then ``record.json.2.sig``, ``.3.sig`` ..."""
    found = [record.with_name(record.name + ".sig")] if record.with_name(record.name + ".sig").exists() else []
    numbered = sorted(record.parent.glob(record.name + ".*.sig"),
                      key=lambda p: int(p.name[len(record.name) + 1:-4]) if p.name[len(record.name) + 1:-4].isdigit() else 0)
    return found + [p for p in numbered if p.name[len(record.name) + 1:-4].isdigit()]


def sign(record: Path, key: Path, *, replace: bool = False) -> Path:
    """Sign ``record`` with ``key``; the signature file it wrote (a new one unless ``replace``)."""
    first = record.with_name(record.name + ".sig")
    target = first
    if not replace:
        n = 2
        while target.exists():
            target, n = record.with_name(f"{record.name}.{n}.sig"), n + 1
    # ssh-keygen writes FILE.sig for a file and refuses to overwrite it: sign a copy's stream instead.
    done = _keygen("-Y", "sign", "-f", str(key), "-n", NAMESPACE, stdin=read_capped(record, RECORD_MAX_BYTES))
    if done.returncode != 0:
        raise RuntimeError(f"ssh-keygen -Y sign -f {key} -n {NAMESPACE} failed: {done.stderr.decode(errors='replace').strip()}")
    target.write_bytes(done.stdout)
    return target


@dataclass(frozen=True)
class SignatureCheck:
    """One signature file: whether it holds for the record, by whom, and what ssh-keygen said."""

    signature: Path
    ok: bool
    principal: str | None
    message: str
    #: the key of a signature that holds, as ssh-keygen names it (``ED25519 key SHA256:...``)
    key: str | None = None
    #: an earlier signature that holds, by the same key: the two are one signer
    same_key_as: Path | None = None


def signature_namespace(armored: bytes) -> str | None:
    """The namespace an SSH signature was made for (``ssh-keygen -Y sign -n NAMESPACE``); None when not one.

    The armored ``SSHSIG`` blob: magic, version, then the public key and the namespace as SSH strings.
    """
    body = b"".join(line for line in armored.splitlines() if line and not line.startswith(b"-----"))
    try:
        blob = base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError):
        return None
    if not blob.startswith(b"SSHSIG") or len(blob) < 14:
        return None
    at = 10  # magic (6) and version (4)
    for field_no in range(2):  # the public key, then the namespace
        if at + 4 > len(blob):
            return None
        (size,) = struct.unpack(">I", blob[at:at + 4])
        if at + 4 + size > len(blob):
            return None
        if field_no == 1:
            return blob[at + 4:at + 4 + size].decode("utf-8", errors="replace")
        at += 4 + size
    return None


def _check_one(sig: Path, copy: Path, allowed_signers: Path, data: bytes) -> tuple[bool, str | None, str, str | None]:
    """``(holds, principal, message, key)`` for one signature, from its checked copy ``copy``."""
    found = _keygen("-Y", "find-principals", "-s", str(copy), "-f", str(allowed_signers))
    principals = found.stdout.decode(errors="replace").split() if found.returncode == 0 else []
    if not principals:
        return False, None, f"signed by a key {allowed_signers} does not list", None
    who = principals[0]
    done = _keygen("-Y", "verify", "-f", str(allowed_signers), "-I", who, "-n", NAMESPACE, "-s", str(copy), stdin=data)
    said = (done.stdout + done.stderr).decode(errors="replace").strip()
    good = _GOOD.search(said)
    if done.returncode == 0 and good:
        return True, good.group("principal"), f"signed by {good.group('principal')} ({good.group('key')})", good.group("key")
    namespace = signature_namespace(copy.read_bytes())
    if namespace is not None and namespace != NAMESPACE:
        return False, who, (f"signed by {who}'s key for namespace {json.dumps(namespace)}, not {json.dumps(NAMESPACE)}: a "
                            f"signature made for another purpose (ssh-keygen -Y sign -n {json.dumps(namespace)}) does not "
                            f"vouch for a record; sign with: python -m pytest_fabric.report.sign RECORD KEY"), None
    # The signature matches these bytes but allowed_signers does not let the key sign this (namespaces=, validity).
    intact = _keygen("-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(copy), stdin=data).returncode == 0
    if intact:
        return False, who, (f"does not verify for {who}: the signature matches the record, but {allowed_signers} does not "
                            f"allow {who}'s key for it (namespaces= or a validity date on its line) ({said})"), None
    return False, who, f"does not verify for {who}: the record changed after it was signed ({said})", None


def check_signatures(record: Path, allowed_signers: Path) -> list[SignatureCheck]:
    """Every signature of ``record`` checked against ``allowed_signers`` (empty: the record has none).

    A signature by a key an earlier one used has ``same_key_as`` set: one key is one signer.
    Signature files are read as untrusted (a regular file, not a symbolic link, a few KiB at most)
    and ssh-keygen checks a private copy, so what it reads is what was checked.
    """
    out: list[SignatureCheck] = []
    first_by_key: dict[str, Path] = {}
    data = read_capped(record, RECORD_MAX_BYTES)
    with tempfile.TemporaryDirectory(prefix="fabric-verify-") as tmp:
        for n, sig in enumerate(signature_files(record)):
            try:
                blob = read_capped(sig, SIGNATURE_MAX_BYTES, follow_symlinks=False)
            except OSError as exc:
                out.append(SignatureCheck(sig, False, None, f"refused unread: {exc}"))
                continue
            copy = Path(tmp) / f"{n}.sig"
            copy.write_bytes(blob)
            ok, principal, message, key = _check_one(sig, copy, allowed_signers, data)
            if not ok or key is None:
                out.append(SignatureCheck(sig, False, principal, message))
                continue
            earlier = first_by_key.setdefault(key, sig)
            out.append(SignatureCheck(sig, True, principal, message, key=key, same_key_as=earlier if earlier != sig else None))
    return out


@dataclass(frozen=True)
class Requirement:
    """One principal ``--require`` names: the signature that counts for it (None: it has not signed), and why."""

    principal: str
    signature: Path | None
    message: str

    @property
    def ok(self) -> bool:
        return self.signature is not None


def _verifies_for(signature: Path, principal: str, allowed_signers: Path, data: bytes) -> bool:
    """Whether ``allowed_signers`` lists the signature's key for ``principal`` (patterns, namespaces, validity: ssh-keygen's)."""
    try:
        blob = read_capped(signature, SIGNATURE_MAX_BYTES, follow_symlinks=False)
    except OSError:
        return False
    with tempfile.TemporaryDirectory(prefix="fabric-verify-") as tmp:
        copy = Path(tmp) / "sig"
        copy.write_bytes(blob)
        done = _keygen("-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE, "-s", str(copy),
                       stdin=data)
    return done.returncode == 0


def _listed(principal: str, allowed_signers: Path) -> bool:
    """Whether a line of ``allowed_signers`` names ``principal`` (its first field: comma-separated patterns, ``!`` negates)."""
    for line in read_capped(allowed_signers, SIGNERS_MAX_BYTES).decode(errors="replace").splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        patterns = line.split()[0].split(",")
        if any(fnmatch.fnmatchcase(principal, p[1:]) for p in patterns if p.startswith("!")):
            continue
        if any(fnmatch.fnmatchcase(principal, p) for p in patterns if not p.startswith("!")):
            return True
    return False


def required_signers(record: Path, allowed_signers: Path, required: Sequence[str],
                     checks: Sequence[SignatureCheck] | None = None) -> list[Requirement]:
    """Whether each of ``required`` signed ``record`` with a key ``allowed_signers`` lists for it.

    Each key counts once: two signatures by it are one signer, and a key the file lists under
    two principals stands for one of them only (the one it is not needed for goes unsigned), so
    two parties need two keys. ``checks`` are :func:`check_signatures`' (checked again when not given).
    """
    checks = check_signatures(record, allowed_signers) if checks is None else checks
    principals = list(dict.fromkeys(required))
    keys = [c for c in checks if c.ok and c.same_key_as is None]  # one signature per key
    data = read_capped(record, RECORD_MAX_BYTES)
    # Which key may stand for which principal: ssh-keygen -Y verify -I says, for every pair.
    may: dict[str, list[SignatureCheck]] = {
        p: [c for c in keys if _verifies_for(c.signature, p, allowed_signers, data)] for p in principals
    }
    # A matching of principals to keys, no key used twice (augmenting paths; a few parties, a few keys).
    holder: dict[Path, str] = {}

    def claim(p: str, seen: set[Path]) -> bool:
        for c in may[p]:
            if c.signature in seen:
                continue
            seen.add(c.signature)
            if c.signature not in holder or claim(holder[c.signature], seen):
                holder[c.signature] = p
                return True
        return False

    for p in principals:
        claim(p, set())
    counted = {p: sig for sig, p in holder.items()}
    by_sig = {c.signature: c for c in keys}
    how = f"python -m pytest_fabric.report.sign {record} KEY"
    out = []
    for p in principals:
        sig = counted.get(p)
        if sig is not None:
            out.append(Requirement(p, sig, f"signed by {p} ({sig.name}, {by_sig[sig].key})"))
            continue
        fix = f"{p} signs with: {how} (KEY: {p}'s own private SSH key, listed in {allowed_signers})"
        if may[p]:  # every key that may stand for p stands for another principal
            others = ", ".join(dict.fromkeys(holder[c.signature] for c in may[p]))
            if len(may[p]) == 1:
                why = (f"the only key that signed for {p} ({may[p][0].key}, {may[p][0].signature.name}) is {others}'s key too, "
                       f"and one key counts once: it counts for {others}")
            else:
                why = (f"the {len(may[p])} keys that signed for {p} ({', '.join(c.signature.name for c in may[p])}) are "
                       f"listed for {others} too, and one key counts once: they count for {others}")
            out.append(Requirement(p, None, f"NOT SIGNED by {p}: {why}; {fix}"))
            continue
        missing = "" if _listed(p, allowed_signers) else f"; {allowed_signers} lists no key for {p}: add theirs ({p} ssh-ed25519 AAAA...)"
        out.append(Requirement(p, None, f"NOT SIGNED by {p}: no signature by a key {allowed_signers} lists for {p}{missing}; {fix}"))
    return out


# ---------------------------------------------------------------------------------------- plugin


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("fabric").addoption(
        "--sign", dest="fabric_sign", metavar="KEY", default=None,
        help="sign the sealed --conformance-json record with this SSH key (ssh-keygen -Y sign -n pytest-fabric); "
        "writes RECORD.sig beside it",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    key = config.getoption("fabric_sign", None)
    if not key:
        return
    if not config.getoption("conformance_json", None):
        raise pytest.UsageError("--sign KEY signs the conformance record: give --conformance-json PATH too")
    path = Path(key).expanduser()
    if not path.is_file():
        raise pytest.UsageError(f"--sign {key}: no such key file")
    try:
        config.stash[SIGN_KEY] = (path, fingerprint(path))
    except (ValueError, RuntimeError) as exc:
        raise pytest.UsageError(f"--sign {key}: {exc}") from None


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    # After every other sessionfinish: the record writer has sealed the record by then.
    result = yield
    config = session.config
    signing = config.stash.get(SIGN_KEY, None)
    if signing is None or hasattr(config, "workerinput") or config.getoption("collectonly"):
        return result  # --collect-only writes no record (record_json.py): nothing to sign
    record = Path(config.getoption("conformance_json")).expanduser().resolve()
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    try:
        written = sign(record, signing[0], replace=True)
        line = f"fabric: {record.name} signed with {signing[1]}: {written}"
    except (OSError, RuntimeError) as exc:
        line = f"fabric: {record.name} NOT signed: {exc}"
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    if reporter is not None:
        reporter.write_line(line)
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_html_results_summary(prefix: list[str], summary: list[str], postfix: list[str], session: Any) -> None:
    config = getattr(session, "config", None)
    signing = config.stash.get(SIGN_KEY, None) if config is not None else None
    if signing is None:
        return
    record = Path(config.getoption("conformance_json")).name  # type: ignore[union-attr]
    prefix.append(
        f"<p class=\"fabric-signed\">Record {html.escape(record)} signed with SSH key {html.escape(signing[1])} "
        f"(signature {html.escape(record)}.sig); check it with <code>python -m pytest_fabric.report.verify "
        f"--signers allowed_signers {html.escape(record)}</code></p>"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pytest_fabric.report.sign RECORD KEY``: add a signature; exit 0 when written."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] in ("-h", "--help"):
        print("usage: python -m pytest_fabric.report.sign RECORD.json SSH_KEY")
        return 2
    record, key = Path(args[0]), Path(args[1]).expanduser()
    try:
        written = sign(record, key)
    except (OSError, RuntimeError) as exc:
        print(f"{record}: not signed: {exc}")
        return 2
    print(f"{record}: signed with {fingerprint(key)}: {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
