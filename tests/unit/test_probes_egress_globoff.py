"""One egress target is one transfer: curl never expands ``[1-3]`` or ``{a,b}`` in a URL (issue 27).

A real curl on this machine fetches from a loopback HTTP server that counts the requests it gets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pytest_fabric.config.inventory import Node
from pytest_fabric.probes.egress import download, upload
from pytest_fabric.run.cluster import NodeHandle
from pytest_fabric.transport.local import LocalTransport
from pytest_fabric.transport.pool import ConnectionPool

BODY = b"x" * 4096


class _Counting(BaseHTTPRequestHandler):
    paths: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.paths.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def do_PUT(self) -> None:  # noqa: N802
        self.paths.append(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.send_response(201)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    paths: list[str] = []
    handler = type("Handler", (_Counting,), {"paths": paths})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", paths
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)


def _local() -> NodeHandle:
    return NodeHandle(Node(name="localhost", host="localhost"), ConnectionPool(lambda _name: LocalTransport("localhost")))


def test_a_download_with_glob_characters_is_one_request(server: tuple[str, list[str]]) -> None:
    base, paths = server
    measured = download(_local(), f"{base}/f[1-3]{{,,}}")
    assert len(paths) == 1, paths  # without --globoff curl sent 9: f1, f1, f1, f2, ...
    assert paths[0] == "/f[1-3]{,,}"
    assert measured.extra["bytes"] == len(BODY)


def test_an_upload_with_glob_characters_is_one_request(server: tuple[str, list[str]]) -> None:
    base, paths = server
    upload(_local(), f"{base}/put[1-2]", size_bytes=1024)
    assert paths == ["/put[1-2]"]
