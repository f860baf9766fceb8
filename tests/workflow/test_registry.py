"""Every model a config names is in the registry, pinned, and runs on a known backend."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO
from thinkbias.models.jobs import named_models

REGISTRY = yaml.safe_load((REPO / "config/models.yaml").read_text())
BACKENDS = {"llamacpp", "vllm", "openai"}
CONFIGS = [p for p in sorted((REPO / "config").glob("*.yaml")) if p.name != "models.yaml"]
# A commit hash, full or abbreviated to at least 7 hex digits (the hub resolves those; the download
# checks the resolved commit starts with it).
PINNED = re.compile(r"[0-9a-f]{7,40}")


def registry_problems(model_ids: set[str], registry: dict) -> list[str]:
    """What keeps these registry entries from being reproducible: unknown backend, unpinned revision,
    no weight files, API entries without a model name."""
    problems = []
    for model_id in sorted(model_ids):
        entry = registry[model_id]
        backend = entry.get("backend")
        if backend not in BACKENDS:
            problems.append(f"{model_id}: unknown backend {backend!r}")
            continue
        if backend == "openai":
            if not entry.get("api_model"):
                problems.append(f"{model_id}: API model without api_model")
            continue
        if not entry.get("files"):
            problems.append(f"{model_id}: no weight files listed")
        derived = next((key for key in ("quantize", "convert") if key in entry), None)
        if derived:
            source = entry[derived].get("from")
            if source not in registry:
                problems.append(f"{model_id}: built ({derived}) from an unknown model")
            else:
                problems += [f"{model_id}: {p}" for p in registry_problems({source}, registry)]
            continue
        revision = str(entry.get("source", {}).get("revision", ""))
        if not PINNED.fullmatch(revision):
            problems.append(f"{model_id}: revision {revision!r} is not a pinned commit hash")
    return problems


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_config_models_are_pinned(path: Path):
    cfg = yaml.safe_load(path.read_text())
    enabled = {k: v for k, v in cfg.items() if isinstance(v, dict) and v.get("enabled", True)}
    models = named_models(enabled, REGISTRY)
    assert models, f"{path.name} names no registry model"
    problems = registry_problems(models, REGISTRY)
    assert not problems, "\n".join(problems)


def test_every_registry_entry_is_pinned():
    assert registry_problems(set(REGISTRY), REGISTRY) == []


def test_problems_are_caught():
    registry = {
        "ok": {"backend": "llamacpp", "files": [{"name": "m.gguf"}], "source": {"revision": "a" * 40}},
        "bad-backend": {"backend": "tensorrt"},
        "branch": {"backend": "vllm", "files": [{"name": "x"}], "source": {"revision": "main"}},
        "short": {"backend": "vllm", "files": [{"name": "x"}], "source": {"revision": "50feefd"}},
        "too-short": {"backend": "vllm", "files": [{"name": "x"}], "source": {"revision": "50fee"}},
        "api": {"backend": "openai"},
        "awq-of-branch": {"backend": "vllm", "files": [{"name": "r"}], "quantize": {"from": "branch"}},
        "awq-of-nothing": {"backend": "vllm", "files": [{"name": "r"}], "quantize": {"from": "gone"}},
    }
    problems = registry_problems(set(registry), registry)
    assert problems == [
        "api: API model without api_model",
        "awq-of-branch: branch: revision 'main' is not a pinned commit hash",
        "awq-of-nothing: built (quantize) from an unknown model",
        "bad-backend: unknown backend 'tensorrt'",
        "branch: revision 'main' is not a pinned commit hash",
        "too-short: revision '50fee' is not a pinned commit hash",
    ]
