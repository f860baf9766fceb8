"""The position study's requests of the embedded default on a few sampled questions, for benchmarks.

What the workflow's position jobs build from config/config.yaml (MMLU, the 4 cyclic orderings, the
mode's prefill and ``max_tokens``), with the data and the model fetched through the manifest and
checked against its sha256, as the workflow's files are.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from thinkbias.llm.types import ModelSpec, Request

EMBEDDED_WEIGHTS = "resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class PositionSample:
    """The embedded config's position section, the prompts table, the model and its requests."""

    position: dict
    prompts: pd.DataFrame
    spec: ModelSpec
    requests: list[Request]


def embedded_position_sample(
    repo: Path, n_questions: int, mode: str, max_tokens: int | None = None, orderings: int = 4
) -> PositionSample:
    """The first ``n_questions`` sampled MMLU questions x their first ``orderings`` of the 4 cyclic
    orderings as ``mode`` requests of the embedded model (``max_tokens``: default the config's
    ``position.max_tokens[mode]``)."""
    from thinkbias.config import validate_config
    from thinkbias.data.fetch import fetch_manifest_file
    from thinkbias.data.loaders import load_mcq
    from thinkbias.data.sampling import sample_rows
    from thinkbias.llm import load_model_spec
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction
    from thinkbias.position.generation import build_requests
    from thinkbias.position.items import four_option_items, permutations_table
    from thinkbias.yamlfile import read_yaml

    repo = Path(repo)
    config = validate_config(read_yaml(repo / "config/config.yaml"), str(repo / "config/schema/config.schema.yaml"))
    pos = config["position"]

    def fetched(path: str) -> str:
        relpath = str(Path(path).relative_to("resources"))
        return str(fetch_manifest_file(repo / config["manifest"], relpath, root=repo / "resources"))

    mcq = load_mcq("mmlu", fetched(pos["benchmarks"]["mmlu"]["path"]), seed=config["seed"])
    items = sample_rows(four_option_items(mcq), n_questions, config["seed"], "item_id", salt="position")
    prompts = permutations_table(items, "cyclic")
    prompts = prompts[prompts["permutation"] < orderings].reset_index(drop=True)
    spec = load_model_spec(str(repo / config["registry"]), "smollm2-135m", weights=fetched(EMBEDDED_WEIGHTS))
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    tokens = max_tokens or int(pos["max_tokens"][mode])
    reqs = build_requests(prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), tokens)
    return PositionSample(pos, prompts, spec, reqs)
