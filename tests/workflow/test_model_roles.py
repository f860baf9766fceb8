"""Every LLM step of the blindspot study is a model role whose job asks for weights, a GPU and the
model's env exactly when the step runs a model (rules/common.smk:model_role), checked on the jobs of
real ``snakemake -n`` runs over combinations of the steps' switches (weights, GPUs) and on the rules
of the workflow Snakemake loads for the same config (conda env), with a registry whose embedded
model declares one GPU. The expected steps per combination are written out here from what each
step's script does (docs/blindspot.md), not computed by the workflow's own helper."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, dry_run_jobs, run_snakemake, tiny_config

MODEL = "smollm2-135m"
STEP_RULES = {
    "rewrite": "blindspot_rewrite",
    "embed": "blindspot_embed",
    "hypothesis": "blindspot_hypothesize",
    "dedup": "blindspot_dedup",
    "variations": "blindspot_variations",
    "quality": "blindspot_quality",
    "verbalization": "blindspot_baseline_judge",
    "target": "blindspot_baseline",
}
CASES = {
    # generated concepts without duplicate judgements: hypotheses and variation pairs run the model, dedup none
    "hypothesis-on-dedup-off": (
        {"hypothesis": {"enabled": True}, "dedup": {"enabled": False}},
        {"embed", "hypothesis", "variations", "target"},
    ),
    # dedup on but no generated concept to compare: no pair, no model
    "hypothesis-off-dedup-on": ({"hypothesis": {"enabled": False}, "dedup": {"enabled": True}}, {"embed", "target"}),
    "every-model-step": (
        {
            "rewrite": {"enabled": True},
            "hypothesis": {"enabled": True},
            "quality": {"enabled": True},
            "verbalization": {"judge": "autorater"},
        },
        set(STEP_RULES),
    ),
    "tfidf-keywords": (
        {"embedder": "tfidf", "rewrite": {"enabled": False}, "verbalization": {"judge": "keywords"}},
        {"target"},
    ),
}


# prints {rule: conda env} of the workflow Snakemake loads with the given config file
RULE_ENVS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, ResourceSettings
with SnakemakeApi() as api:
    config = ConfigSettings(configfiles=[Path(sys.argv[1])])
    wf = api.workflow(resource_settings=ResourceSettings(), config_settings=config, snakefile=Path("Snakefile"),
                      workdir=Path("."))
    print(json.dumps({r.name: r.conda_env for r in wf._workflow.rules if isinstance(r.conda_env, str)}))
"""


def rule_envs(workdir: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", RULE_ENVS, str(workdir / "test-config.yaml")],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def gpu_registry(path: Path) -> Path:
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    registry[MODEL]["gpus"] = 1
    out = path / "gpu-models.yaml"
    out.write_text(yaml.safe_dump(registry, sort_keys=False))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_blindspot_steps_ask_for_weights_and_gpus_exactly_when_they_run_a_model(case, workflow_dir):
    switches, running = CASES[case]
    config = tiny_config(blindspot=switches)
    config["registry"] = str(gpu_registry(workflow_dir))
    proc = run_snakemake(workflow_dir, ["-n", "blindspot_report"], config=config)
    jobs = {job["rule"]: job for job in dry_run_jobs(proc.stdout)}
    weights = f"resources/models/{MODEL}/"
    seen = {}
    for step, rule in STEP_RULES.items():
        job = jobs[rule]
        seen[step] = (any(f.startswith(weights) for f in job["input"]), job["resources"].get("gpu"))
    expected = {step: (step in running, "1" if step in running else "0") for step in STEP_RULES}
    assert seen == expected
    envs = rule_envs(workflow_dir)
    task_steps = [step for step in STEP_RULES if step != "target"]  # the target's env follows its {model}
    assert {step: envs[STEP_RULES[step]] for step in task_steps} == {
        # the model asks for a GPU: llama.cpp with CUDA (thinkbias.llm.gpu_offload.conda_env)
        step: "../envs/llamacpp-cuda.yaml" if step in running else "../envs/analysis.yaml"
        for step in task_steps
    }
