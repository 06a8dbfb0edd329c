"""known_hosts as sites write it, against a real sshd: ``@cert-authority`` and ``@revoked`` lines.

A site that signs host keys with an SSH CA has ``@cert-authority *.site.org ssh-ed25519 ...`` in
its known_hosts; OpenSSH reads that file, and so must we: plain keys beside marker lines still
verify, a host certificate signed by the CA is verified against the CA line (signature, host
name, validity), and a ``@revoked`` key is refused.  Each case is also put to OpenSSH's own ssh(1)
with the same file, which must agree.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_fabric.transport import HostKeyMismatch, SSHSettings, SSHTransport
from pytest_fabric.transport.results import HostKeyLog

try:  # tests/ is not a package: pytest puts this directory on sys.path
    from loopback_sshd import LoopbackSshd, make_key, sshd_unavailable
except ImportError:  # pragma: no cover - when tests/ is imported as a package
    from integration.loopback_sshd import LoopbackSshd, make_key, sshd_unavailable  # type: ignore[no-redef]

pytestmark = pytest.mark.skipif(sshd_unavailable() is not None, reason=sshd_unavailable() or "")


class CertifiedSshd(LoopbackSshd):
    """A loopback sshd that also presents a host certificate (``HostCertificate``)."""

    def __init__(self, workdir: Path, certificate: Path, **kwargs: Any) -> None:
        super().__init__(workdir, **kwargs)
        self.certificate = certificate

    def _write_config(self) -> None:
        super()._write_config()
        self.config.write_text(self.config.read_text() + f"HostCertificate {self.certificate}\n")


def _public(path: Path) -> str:
    kind, blob, *_ = Path(f"{path}.pub").read_text().split()
    return f"{kind} {blob}"


def _sign(workdir: Path, ca: Path, host_key: Path, principals: str, validity: str = "+1h") -> Path:
    """A host certificate for ``host_key`` signed by ``ca`` (ssh-keygen -s), in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    key = workdir / "ssh_host_ed25519_key"
    key.write_bytes(host_key.read_bytes())
    key.chmod(0o600)
    Path(f"{key}.pub").write_text(Path(f"{host_key}.pub").read_text())
    subprocess.run(
        ["ssh-keygen", "-q", "-s", str(ca), "-I", "test-host", "-h", "-n", principals, "-V", validity, f"{key}.pub"],
        check=True, stdin=subprocess.DEVNULL, capture_output=True,
    )
    return workdir / "ssh_host_ed25519_key-cert.pub"


@pytest.fixture(autouse=True)
def _no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The site CA, a CA nobody trusts, and the node's host key."""
    d = tmp_path_factory.mktemp("keys")
    return {name: make_key(d / name) for name in ("site_ca", "other_ca", "host")}


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory, keys: dict[str, Path]) -> Callable[..., LoopbackSshd]:
    """Start a loopback sshd presenting a certificate signed as asked; all are stopped after the module."""
    started: list[LoopbackSshd] = []

    def start(ca: str = "site_ca", principals: str = "127.0.0.1", validity: str = "+1h") -> LoopbackSshd:
        d = tmp_path_factory.mktemp("certified")
        cert = _sign(d / "cert", keys[ca], keys["host"], principals, validity)
        server = CertifiedSshd(d, cert, host_key=d / "cert" / "ssh_host_ed25519_key").start()
        started.append(server)
        return server

    yield start  # type: ignore[misc]
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopbackSshd]:
    server = LoopbackSshd(tmp_path_factory.mktemp("plain")).start()
    yield server
    server.stop()


def _settings(server: LoopbackSshd, known_hosts: Path, tmp_path: Path, **overrides: Any) -> SSHSettings:
    ssh_config = tmp_path / "ssh_config"
    ssh_config.write_text("")
    values: dict[str, Any] = {
        "host": "127.0.0.1", "port": server.port, "user": server.user, "identity_file": server.client_key,
        "known_hosts": known_hosts, "connect_timeout": 3.0, "ssh_config": ssh_config,
    }
    values.update(overrides)
    return SSHSettings(**values)


def _connect(server: LoopbackSshd, known_hosts: Path, tmp_path: Path, **overrides: Any) -> str:
    t = SSHTransport("node01", _settings(server, known_hosts, tmp_path, **overrides))
    try:
        return t.run("echo ok", timeout=10).stdout.strip()
    finally:
        t.close()


def _openssh_accepts(server: LoopbackSshd, known_hosts: Path) -> bool:
    """What OpenSSH's ssh(1) decides with the same known_hosts file (strict checking)."""
    done = subprocess.run(
        ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
         "-o", f"UserKnownHostsFile={known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
         "-o", "IdentitiesOnly=yes", "-i", str(server.client_key), "-p", str(server.port),
         f"{server.user}@127.0.0.1", "true"],
        stdin=subprocess.DEVNULL, capture_output=True, timeout=20, check=False,
    )
    return done.returncode == 0


def _other_key(tmp_path: Path) -> str:
    """A key of some other machine."""
    return _public(make_key(tmp_path / f"unrelated{len(list(tmp_path.glob('unrelated*')))}"))


def test_plain_keys_work_beside_marker_lines_comments_and_hashed_names(
    sshd: LoopbackSshd, keys: dict[str, Path], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    hashed = subprocess.run(  # the node's line hashed, as HashKnownHosts yes writes it
        ["ssh-keygen", "-H", "-f", "-"], input=sshd.known_hosts_line(), capture_output=True, text=True, check=False
    )
    known.write_text(
        "# site CA for every node\n"
        f"@cert-authority *.site.org,!bastion.site.org {_public(keys['site_ca'])}\n"
        f"@revoked * {_other_key(tmp_path)}\n"
        "\n"
        f"elsewhere.site.org {_other_key(tmp_path)} a comment\n"
        + sshd.known_hosts_line()
    )
    assert _connect(sshd, known, tmp_path) == "ok"
    assert _openssh_accepts(sshd, known)
    if hashed.returncode == 0 and "|1|" in hashed.stdout:
        hashed_file = tmp_path / "hashed_known_hosts"
        lines = [line for line in hashed.stdout.splitlines() if line.startswith("|1|")]
        hashed_file.write_text(f"@cert-authority * {_public(keys['site_ca'])}\n" + "\n".join(lines) + "\n")
        assert _connect(sshd, hashed_file, tmp_path) == "ok"


@pytest.mark.parametrize("policy", ["strict", "accept-new", "ignore"])
def test_a_revoked_key_is_refused_under_every_policy(sshd: LoopbackSshd, tmp_path: Path, policy: str) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"@revoked [127.0.0.1]:{sshd.port} {sshd.host_public_key}\n" + sshd.known_hosts_line())
    before = known.read_text()
    log = HostKeyLog()
    with pytest.raises(HostKeyMismatch) as info:
        _connect(sshd, known, tmp_path, host_key_policy=policy, host_key_log=log)
    assert f"is marked @revoked in {known} line 1" in str(info.value)
    assert [d.decision for d in log.decisions] == ["refused revoked"]
    assert known.read_text() == before  # accept-new appended nothing
    assert not _openssh_accepts(sshd, known)


@pytest.mark.parametrize("policy", ["strict", "accept-new"])
def test_a_revoked_key_is_refused_as_revoked_where_another_key_is_listed(
    sshd: LoopbackSshd, tmp_path: Path, policy: str
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {_other_key(tmp_path)}\n@revoked * {sshd.host_public_key}\n")
    log = HostKeyLog()
    with pytest.raises(HostKeyMismatch) as info:
        _connect(sshd, known, tmp_path, host_key_policy=policy, host_key_log=log)
    assert f"is marked @revoked in {known} line 2" in str(info.value) and "CHANGED" not in str(info.value)
    assert [d.decision for d in log.decisions] == ["refused revoked"]
    assert not _openssh_accepts(sshd, known)


def test_a_certificate_signed_by_the_site_ca_is_verified(
    certified: Callable[..., LoopbackSshd], keys: dict[str, Path], tmp_path: Path
) -> None:
    server = certified()
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority [127.0.0.1]:* {_public(keys['site_ca'])}\n")
    log = HostKeyLog()
    assert _connect(server, known, tmp_path, host_key_log=log) == "ok"
    assert [d.decision for d in log.decisions] == ["verified by CA"]
    assert known.read_text().count("\n") == 1  # nothing appended
    assert _openssh_accepts(server, known)
    # accept-new trusts the CA too and appends nothing
    assert _connect(server, known, tmp_path, host_key_policy="accept-new") == "ok"
    assert known.read_text().count("\n") == 1


@pytest.mark.parametrize(
    ("signing", "known_ca", "reason"),
    [
        ({"principals": "node99.site.org"}, "site_ca", "it is for node99.site.org, not for 127.0.0.1"),
        ({"ca": "other_ca"}, "site_ca", "signed by a CA that no @cert-authority line lists for this host"),
        ({"validity": "20200101:20200102"}, "site_ca", "it expired at 2020-01-02"),
        ({}, "revoked", "the CA that signed it is marked @revoked"),
    ],
    ids=["wrong-host", "unknown-ca", "expired", "revoked-ca"],
)
def test_a_certificate_the_ca_does_not_vouch_for_is_refused_with_the_reason(
    certified: Callable[..., LoopbackSshd], keys: dict[str, Path], tmp_path: Path,
    signing: dict[str, str], known_ca: str, reason: str,
) -> None:
    server = certified(**signing)
    known = tmp_path / "known_hosts"
    lines = f"@cert-authority [127.0.0.1]:* {_public(keys['site_ca'])}\n"
    if known_ca == "revoked":
        lines += f"@revoked * {_public(keys['site_ca'])}\n"
    known.write_text(lines)
    log = HostKeyLog()
    for policy in ("strict", "accept-new"):
        with pytest.raises(HostKeyMismatch) as info:
            _connect(server, known, tmp_path, host_key_policy=policy, host_key_log=log)
        message = str(info.value)
        assert "node01" in message and "presents a host certificate" in message and reason in message, message
        assert "ssh-keygen -s" in message
    assert known.read_text() == lines  # accept-new did not fall back to trusting the plain key
    assert {d.decision for d in log.decisions} == {"refused certificate"}
    assert not _openssh_accepts(server, known)


def test_a_plain_key_from_a_host_a_ca_covers_says_why_it_is_unknown(
    sshd: LoopbackSshd, keys: dict[str, Path], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"@cert-authority [127.0.0.1]:* {_public(keys['site_ca'])}\n")
    with pytest.raises(HostKeyMismatch) as info:
        _connect(sshd, known, tmp_path)
    assert f"{known} line 1 trusts a CA for this host, but the node presented a plain key" in str(info.value)


def test_a_run_on_the_simulated_cluster_reads_marker_lines(
    pytester: pytest.Pytester, simcluster: Any, keys: dict[str, Path], tmp_path: Path
) -> None:
    """Through the command line: node01's plain key verifies beside the marker lines (its check reaches
    the node: ibstat is missing there), node02's key is @revoked and its error says so, with no traceback."""
    import yaml

    node01, node02 = simcluster.nodes[:2]
    known = tmp_path / "known_hosts"
    known.write_text(
        f"@cert-authority *.site.org {_public(keys['site_ca'])}\n"
        f"@revoked * {' '.join(node02.host_key_pub.split()[:2])}\n"
        + simcluster.known_hosts.read_text()
    )
    inventory = simcluster.write_inventory(tmp_path / "inventory.yaml", nodes=[node01.name, node02.name])
    doc = yaml.safe_load(inventory.read_text())
    doc["defaults"]["known_hosts"] = str(known)
    inventory.write_text(yaml.safe_dump(doc))
    result = pytester.runpytest_subprocess(
        "--cluster", str(inventory), "--profile", "roce-small", "-p", "no:cacheprovider", "-k", "link_layer",
        timeout=300,
    )
    out = result.stdout.str()
    assert "InvalidHostKey" not in out and "Traceback" not in out, out[-4000:]
    result.stdout.fnmatch_lines(["node node01: ibstat: command not found"])
    result.stdout.fnmatch_lines([f"node node02: *host key of {node02.address} (ssh-ed25519 SHA256:*) is marked "
                                 f"@revoked in {known} line 2",
                                 "fix: the node must get a new host key; if the key is trusted again, delete that line"])
