"""Real HTTP servers on 127.0.0.1 that misbehave the way APIs do: answer with scripted statuses,
``Retry-After`` headers and bodies (JSON, or raw text such as an HTML page), echo the request's
``Authorization`` header back, write a reply byte by byte as the test scripts it (a body longer
than promised, or cut off before its end), or accept a connection and never answer. Each runs in a
thread of the test process and records what it received."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable

import yaml


def completion(content: str | None, completion_tokens: int = 3, finish_reason: str = "stop", **message) -> dict:
    """A chat completion body as OpenAI-compatible servers send it (``message``: further fields of
    the reply's message, e.g. ``refusal``)."""
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "served",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, **message},
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": completion_tokens, "total_tokens": 5 + completion_tokens},
    }


# status, headers, body: JSON (dict, list, None), or text sent as it is (Content-Type from the
# headers, application/json unless they name one)
Reply = tuple[int, dict, object]


def api_registry(path: Path, url: str, model: str = "scripted-api", **extra) -> str:
    """Write a registry with one ``openai`` model at ``url`` (``extra``: its options) to ``path``."""
    entry = {
        "backend": "openai",
        "description": "a local scripted server",
        "license": "mit",
        "api_base": url,
        "api_model": "served",
        "files": [],
        "thinking": "none",
        "n_ctx": 4096,
        "gpus": 0,
        "extra": {"backoff_s": 0.01, "max_concurrency": 1, **extra},
    }
    path.write_text(yaml.safe_dump({model: entry}))
    return str(path)


class LocalServer:
    """A ``ThreadingHTTPServer`` on a free port of 127.0.0.1, serving in a daemon thread while the
    ``with`` block runs."""

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def cached_entries(cache_dir, model: str) -> int:
    """Entries in ``model``'s request cache under ``cache_dir``."""
    from thinkbias.llm.cache import RequestCache, cache_path

    cache = RequestCache(cache_path(cache_dir, model))
    try:
        return cache.count()
    finally:
        cache.close()


class ScriptedApi(LocalServer):
    """``POST /v1/chat/completions`` answered by ``respond(n, headers)`` for the n-th request (0-based)."""

    def __init__(self, respond: Callable[[int, dict], Reply]):
        self.respond, self.received, self.times = respond, [], []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                n = len(api.received)
                api.received.append(headers)
                api.times.append(time.monotonic())
                status, extra, body = api.respond(n, headers)
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                extra = {"Content-Type": "application/json", **extra}
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # keep the test output quiet
                pass

        self.serve(Handler)


class RawHttpApi(LocalServer):
    """``POST /v1/chat/completions`` answered by ``send(n, write)`` for the n-th request: it writes
    the raw HTTP reply, status line and headers included, then the connection is closed. A client
    that hangs up half-way ends the reply quietly; ``sent[n]`` counts the bytes written."""

    def __init__(self, send: Callable[[int, Callable[[bytes], None]], None]):
        self.send, self.sent = send, []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                n = len(api.sent)
                api.sent.append(0)

                def write(data: bytes) -> None:
                    self.wfile.write(data)
                    api.sent[n] += len(data)

                try:
                    api.send(n, write)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.serve(Handler)


def echo_authorization(status: int) -> Callable[[int, dict], Reply]:
    """Answer ``status`` with a body that repeats the request's Authorization header (an error
    body when status >= 400, else a reply whose content carries it)."""

    def respond(n: int, headers: dict) -> Reply:
        text = f"injected {status} auth={headers.get('authorization', '')}"
        if status >= 400:
            return status, {}, {"error": {"message": text, "type": "server_error"}}
        return status, {}, completion(text)

    return respond


class HangingServer:
    """Accepts TCP connections on 127.0.0.1 and never sends a byte; counts the connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted.append(conn)  # held open, never answered

    def __enter__(self) -> "HangingServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.thread.join()
        for conn in self.accepted:
            conn.close()
        self.sock.close()
