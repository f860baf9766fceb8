"""``python -m thinkbias.llm.vllm_worker ADDRESS``: serve one ``InProcessRunner`` over a local socket
to the ``SubprocessRunner`` that started this process (``thinkbias.llm.vllm_runner``)."""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Listener


def serve(address: str, authkey: bytes) -> None:
    """Answer ``(method, args)`` messages until ``close`` or the other end goes away."""
    from thinkbias.llm.vllm_runner import InProcessRunner, format_exception

    runner = None
    listener = Listener(address, family="AF_UNIX", authkey=authkey)
    try:
        with listener.accept() as conn:
            while True:
                try:
                    method, args = conn.recv()
                except EOFError:
                    break
                try:
                    if method == "init":
                        runner = InProcessRunner(*args)
                        value = runner.info
                    elif method == "close":
                        if runner is not None:
                            runner.close()
                        conn.send(("ok", None))
                        break
                    else:
                        value = getattr(runner, method)(*args)
                except Exception as exc:  # sent back whole: the engine raises it with this traceback
                    conn.send(("error", format_exception(exc)))
                    continue
                conn.send(("ok", value))
    finally:
        try:
            listener.close()
        except FileNotFoundError:  # the engine's side removed the socket's folder first
            pass


if __name__ == "__main__":  # vLLM starts its engine core in a spawned process: keep this guarded
    serve(sys.argv[1], bytes.fromhex(os.environ.pop("THINKBIAS_VLLM_AUTHKEY")))
