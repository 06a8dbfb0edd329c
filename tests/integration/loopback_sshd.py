"""A private OpenSSH server on 127.0.0.1 for transport tests and benchmarks.

It has its own host key, its own authorized_keys and a free high port, so it
touches nothing of the machine's own sshd or ~/.ssh.  It is started with an
absolute path (sshd refuses re-exec otherwise) and stopped by its PID only.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["SSHD", "LoopbackSshd", "free_port", "make_key", "sshd_unavailable"]

SSHD = "/usr/sbin/sshd"


def sshd_unavailable() -> str | None:
    """Why a loopback sshd cannot run here, or None when it can."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt-get install openssh-server)"
    if shutil.which("ssh-keygen") is None:
        return "ssh-keygen is not installed"
    if os.geteuid() != 0:
        return "a loopback sshd that logs in as the current user needs root here"
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_key(path: Path, kind: str = "ed25519") -> Path:
    """Create an unencrypted key pair at ``path`` / ``path.pub``."""
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            kind,
            "-N",
            "",
            "-C",
            f"pytest-fabric-{path.name}",
            "-f",
            str(path),
        ],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


class LoopbackSshd:
    """``sshd -D`` on 127.0.0.1:``port`` accepting ``client_key`` for the current user."""

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        host_key: Path | None = None,
        max_startups: str = "10:30:100",
    ) -> None:
        self.workdir = workdir
        #: sshd's MaxStartups (start:rate:full); OpenSSH's default unless a test lowers it
        self.max_startups = max_startups
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.host_key = host_key or make_key(workdir / "ssh_host_ed25519_key")
        self.client_key = workdir / "id_ed25519"
        if not self.client_key.exists():
            make_key(self.client_key)
        self.authorized_keys = workdir / "authorized_keys"
        self.authorized_keys.write_text(Path(f"{self.client_key}.pub").read_text())
        self.config = workdir / f"sshd_config.{self.port}"
        self.log = workdir / f"sshd.{self.port}.log"
        self.user = os.environ.get("USER") or "root"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def host_public_key(self) -> str:
        """``type base64`` of the host key, as a known_hosts line wants it."""
        kind, blob, *_ = Path(f"{self.host_key}.pub").read_text().split()
        return f"{kind} {blob}"

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_public_key}\n"

    def _write_config(self) -> None:
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    "PidFile none",
                    "UsePAM no",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "AllowTcpForwarding yes",
                    # OpenSSH's defaults, as a real node has them: the transport must work within them.
                    "MaxSessions 10",
                    f"MaxStartups {self.max_startups}",
                    "LogLevel ERROR",
                    "",
                ]
            )
        )

    def start(self, timeout: float = 10.0) -> LoopbackSshd:
        """Start sshd and return once it answers with a banner."""
        os.makedirs("/run/sshd", exist_ok=True)  # privilege separation directory sshd insists on
        self._write_config()
        check = subprocess.run(
            [SSHD, "-t", "-f", str(self.config)], capture_output=True, text=True, check=False
        )
        if check.returncode != 0:
            raise RuntimeError(f"sshd rejects {self.config}: {check.stderr.strip()}")
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"sshd exited with {self.process.returncode}: {self.log.read_text()[-2000:]}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as sock:
                    if sock.recv(64).startswith(b"SSH-"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"sshd on port {self.port} did not answer within {timeout} s")

    def pause(self) -> None:
        """SIGSTOP the listener: TCP still connects (kernel backlog) but no banner comes."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def stop(self) -> None:
        """Stop the listener by its PID (sessions it forked end with their connections)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGCONT)
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def __enter__(self) -> LoopbackSshd:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
