"""known_hosts read as OpenSSH reads it (markers, hashed names, wildcards, comments) and host certificates checked.

Certificates are made by ssh-keygen itself, as a site CA would make them.
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from pytest_fabric.transport.ssh.hostcert import certificate_problem, parse_certificate
from pytest_fabric.transport.ssh.knownhosts import KnownHosts, host_matches, parse_known_hosts

ED = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
# "node01" hashed with the salt 00..13, as HashKnownHosts yes writes names (HMAC-SHA1)
HASHED_NODE01 = "|1|AAECAwQFBgcICQoLDA0ODxAREhM=|JsP6xfMbTy4xbQzYCGJ3l2URm2s="


def test_marker_lines_comments_and_bad_lines() -> None:
    text = (
        "# a comment\n"
        "\n"
        f"@cert-authority *.site.org ssh-ed25519 {ED} site CA\n"
        f"@revoked * ssh-ed25519 {ED}\n"
        f"node01,10.0.0.1 ssh-ed25519 {ED} root@node01\n"
        f"@trusted node02 ssh-ed25519 {ED}\n"
        "node03 ssh-ed25519 not!base64\n"
        "node04 ssh-ed25519\n"
    )
    keys, skipped = parse_known_hosts(text)
    assert [(k.number, k.marker, k.patterns) for k in keys] == [
        (3, "@cert-authority", ("*.site.org",)),
        (4, "@revoked", ("*",)),
        (5, "", ("node01", "10.0.0.1")),
    ]
    assert keys[2].blob == base64.b64decode(ED) and keys[2].key_type == "ssh-ed25519"
    assert [(s.number, s.reason) for s in skipped] == [
        (6, "unknown marker '@trusted'"),
        (7, "the 'ssh-ed25519' key is not valid base64"),
        (8, "expected: [marker] hosts keytype key [comment]"),
    ]


@pytest.mark.parametrize(
    ("patterns", "name", "matches"),
    [
        (("node01",), "node01", True),
        (("NODE01",), "node01", True),
        (("node01",), "node011", False),
        (("*.site.org",), "gpu7.site.org", True),
        (("*.site.org", "!bastion.site.org"), "bastion.site.org", False),
        (("node0?",), "node07", True),
        (("[127.0.0.1]:*",), "[127.0.0.1]:2222", True),
        (("[127.0.0.1]:2222",), "[127.0.0.1]:2222", True),  # brackets are literal, not a class
        (("[127.0.0.1]:2222",), "1", False),
        ((HASHED_NODE01,), "node01", True),
        ((HASHED_NODE01,), "node02", False),
    ],
)
def test_host_patterns_match_as_openssh(patterns: tuple[str, ...], name: str, matches: bool) -> None:
    assert host_matches(patterns, name) is matches


def test_lines_about_a_name_in_file_order_revoked_apart() -> None:
    text = (
        f"@cert-authority *.site.org ssh-ed25519 {ED}\n"
        f"gpu1.site.org,10.0.0.1 ssh-ed25519 {ED}\n"
        f"@revoked gpu2.site.org ssh-ed25519 {ED}\n"
        f"GPU1.site.org ssh-ed25519 {ED}\n"
        f"{HASHED_NODE01} ssh-ed25519 {ED}\n"
        f"gpu?.site.org,!gpu1.site.org ssh-ed25519 {ED}\n"
    )
    known = KnownHosts(parse_known_hosts(text)[0])
    assert [line.number for line in known.about("gpu1.site.org")] == [1, 2, 4]
    assert [line.number for line in known.about("gpu2.site.org")] == [1, 6]  # the @revoked line is apart
    assert [line.number for line in known.revoked] == [3]
    assert [line.number for line in known.about("node01")] == [5]
    assert [line.number for line in known.about("10.0.0.1")] == [2]


def test_the_hashed_fixture_is_what_ssh_keygen_writes(tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    path = tmp_path / "known_hosts"
    path.write_text(f"node01 ssh-ed25519 {ED}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(path)], check=True, capture_output=True)
    (line,) = parse_known_hosts(path.read_text())[0]
    assert line.patterns[0].startswith("|1|") and host_matches(line.patterns, "node01")
    assert not host_matches(line.patterns, "node02")


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, capture_output=True)
    return path


def _blob(pub: Path) -> bytes:
    return base64.b64decode(pub.read_text().split()[1])


@pytest.fixture
def signed(tmp_path: Path) -> tuple[bytes, bytes, bytes]:
    """(certificate blob, CA blob, host key blob) of a host certificate for node01 valid for an hour."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    ca, host = _keygen(tmp_path / "ca"), _keygen(tmp_path / "host")
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(ca), "-I", "node01-key", "-h", "-n", "node01,node01.site.org", "-V", "+1h",
         f"{host}.pub"],
        check=True, capture_output=True,
    )
    return _blob(Path(f"{host}-cert.pub")), _blob(Path(f"{ca}.pub")), _blob(Path(f"{host}.pub"))


def test_a_certificate_is_parsed(signed: tuple[bytes, bytes, bytes]) -> None:
    cert_blob, ca_blob, host_blob = signed
    cert = parse_certificate(cert_blob)
    assert cert.key_type == "ssh-ed25519" and cert.key_blob == host_blob and cert.ca_blob == ca_blob
    assert cert.cert_type == 2 and cert.key_id == "node01-key"
    assert cert.principals == ("node01", "node01.site.org")
    assert cert.valid_before - cert.valid_after >= 3600


def test_certificate_checks(signed: tuple[bytes, bytes, bytes]) -> None:
    cert_blob, ca_blob, host_blob = signed
    cert = parse_certificate(cert_blob)
    now = time.time()

    def problem(host: str = "node01", at: float = now, cas: tuple[bytes, ...] = (ca_blob,), revoked: tuple[bytes, ...] = ()) -> str | None:
        return certificate_problem(cert, host=host, now=at, authorities=cas, revoked=revoked)

    assert problem() is None and problem("node01.site.org") is None
    assert problem("node02") == "it is for node01, node01.site.org, not for node02"
    assert problem(cas=(host_blob,)) == "it is signed by a CA that no @cert-authority line lists for this host"
    assert problem(revoked=(ca_blob,)) == "the CA that signed it is marked @revoked"
    assert (problem(at=now + 7200) or "").startswith("it expired at ")
    assert (problem(at=now - 7200) or "").startswith("it is not valid before ")
    # one flipped byte in the signed part: the CA's signature no longer verifies
    tampered = bytearray(cert_blob)
    tampered[cert_blob.index(b"node01-key")] ^= 1
    forged = parse_certificate(bytes(tampered))
    assert certificate_problem(forged, host="node01", now=now, authorities=(ca_blob,), revoked=()) == (
        "its CA signature does not verify"
    )


def test_not_a_certificate_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="is not a certificate type"):
        parse_certificate(base64.b64decode(ED))
