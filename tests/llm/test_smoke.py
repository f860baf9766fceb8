"""The GPU smoke checks' routine, run here on the embedded model on CPU."""

import pytest

from thinkbias.llm.smoke import run_smoke

pytestmark = pytest.mark.slow


def test_run_smoke_on_embedded_model(engine):
    out = run_smoke(engine, max_tokens=24, n_requests=2)
    assert out["tokens"] > 0 and out["tokens_per_s"] > 0
    assert 0 <= out["p_yes_nothink"] <= 1 and len(out["fused_p_yes"]) == 3
