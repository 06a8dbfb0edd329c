"""The lab's control socket: ``python -m simcluster fault ...`` in one shell, the lab in another.

A Unix socket in the lab's workdir; one JSON line in (the fault's words), one JSON line out
(``{"ok": true, "said": "node02: link shaped to 100 Mbit/s"}``). The lab applies every request in
the thread that serves it, one at a time, so two faults never race on the model files.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["ControlServer", "request"]


class ControlServer:
    """Serves ``handle(words) -> (ok, said)`` on a Unix socket until :meth:`close`."""

    def __init__(self, path: Path, handle: Callable[[list[str]], tuple[bool, str]]) -> None:
        self.path = path
        lock = threading.Lock()

        class _Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    words = [str(w) for w in json.loads(self.rfile.readline())]
                except ValueError as exc:
                    ok, said = False, f"not a request: {exc}"
                else:
                    with lock:
                        ok, said = handle(words)
                self.wfile.write((json.dumps({"ok": ok, "said": said}) + "\n").encode())

        path.unlink(missing_ok=True)
        self._server = socketserver.ThreadingUnixStreamServer(str(path), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="simcluster-control", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)


def request(path: Path, words: list[str], timeout: float = 120.0) -> tuple[bool, str]:
    """Send one request to a running lab; ``(ok, what it said)``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except OSError as exc:
            return False, f"no lab listening on {path} ({exc.strerror or exc}): start one with python -m simcluster up"
        sock.sendall((json.dumps(words) + "\n").encode())
        reply = json.loads(sock.makefile().readline())
    return bool(reply["ok"]), str(reply["said"])
