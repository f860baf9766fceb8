"""Run planner: what a config will ask of its models, before anything is generated.

Per (study, model, arm/mode) it counts requests, prompt and generated tokens, probe forward passes,
job- and GPU-hours and, for API models with a registry ``price``, US$, twice:

- **budget**: every request runs to its token budget and the blindspot audit tests every concept on
  every input (exhaustive testing), an upper bound;
- **expected**: generated tokens per request from the measured mean of the model's cached answers
  (all its modes pooled), else from a length the paper reports (``planner.length_priors``), each
  capped at the request's budget, else the budget; blindspot variation calls less the share the
  staged procedure is expected to save (``planner.blindspot_saved_share``, measured by the simulation).

Hours are ``(generated + prompt / prefill_ratio + probes * probe_tokens / prefill_ratio)`` over the
job's throughput: ``tokens_per_s`` of one stream times the API model's concurrency
(``extra.max_concurrency``) or, for a llama.cpp entry with ``extra.n_parallel`` > 1, times the
measured batched/sequential ratio (``planner.llamacpp_batch_speedup``), plus ``jobs * startup_s``:
each job (one shard of ``shard_size`` requests, as the rules cut them) loads its engine once before
its first token (``planner.startup_s`` per model, else ``planner.default_startup_s`` per backend).
A probe pass prefills ``probe_tokens`` (:func:`probe_prefill_tokens`): on vLLM, probing each batch of
generations while its traces are still in the prefix cache (waves), the tokens after the last full
cached block plus the cue; on llama.cpp, the cue on the KV state the generation left.
:func:`plan_assumptions` lists every number the plan rests on with its source, printed under the table.

Before any of that, each local model's weights are prepared by one job: a download (``weights_<id>``
or the manifest's ``fetch``) or a GPU quantization (``quantize_<id>``, after its source's download);
``preparation_table`` lists those jobs with their size and hours.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.clusters import stage_schedule
from thinkbias.llm.openai_backend import DEFAULT_MAX_CONCURRENCY
from thinkbias.markdown import markdown_table
from thinkbias.models.jobs import convert_rule, prepared_models, quantize_rule, weights_rule
from thinkbias.position.plan import generation_runs, n_prompts, shard_count, truncation_shard_count

PLAN_COLUMNS = [
    "study",
    "model",
    "backend",
    "arm_or_mode",
    "parallelism",
    "jobs",
    "requests",
    "expected_requests",
    "prompt_tokens",
    "expected_prompt_tokens",
    "generated_tokens",
    "expected_generated_tokens",
    "token_source",
    "probe_passes",
    "startup_hours",
    "hours",
    "expected_hours",
    "gpu_hours",
    "expected_gpu_hours",
    "usd",
    "expected_usd",
]
MARKDOWN_COLUMNS = [
    "study",
    "model",
    "arm_or_mode",
    "parallelism",
    "jobs",
    "requests",
    "expected_requests",
    "generated_tokens",
    "expected_generated_tokens",
    "token_source",
    "probe_passes",
    "hours",
    "expected_hours",
    "gpu_hours",
    "expected_gpu_hours",
    "usd",
    "expected_usd",
]
PREPARATION_COLUMNS = ["model", "job", "size_gb", "gpus", "hours", "gpu_hours"]
NO_COST = "—"
DEFAULT_SHARD_SIZE = 16  # config shard_size's schema default


@dataclass(frozen=True)
class Throughput:
    """Generation speed of one job of a model: ``generated_per_s`` tokens per second of one stream,
    times ``parallel_factor`` (API concurrency, or the batched/sequential ratio of a batched llama.cpp
    job); prompt prefill runs ``prefill_ratio`` times faster, and each probe pass counts as
    ``probe_tokens`` prefill tokens (:func:`probe_prefill_tokens`). ``parallelism`` says in words what
    the factor is."""

    generated_per_s: float
    prefill_ratio: float = 10.0
    probe_tokens: float = 0.0
    parallel_factor: float = 1.0
    parallelism: str = "1 stream"

    def seconds(self, prompt: float, generated: float, probe_passes: float) -> float:
        """Seconds of one job for these token counts."""
        work = generated + (prompt + probe_passes * self.probe_tokens) / self.prefill_ratio
        return work / (self.generated_per_s * self.parallel_factor)


@dataclass(frozen=True)
class Sourced:
    """A planner setting and where its value comes from."""

    value: float
    source: str


@dataclass(frozen=True)
class JobStartup:
    """Seconds one job of a model spends before its first token (engine start: weights loaded and, on
    vLLM, CUDA graphs captured), where the number comes from and the planner setting that gives it."""

    seconds: float
    source: str
    key: str


@dataclass(frozen=True)
class LengthPrior:
    """A mean generated length per request that a paper reports, in tokens (``chars`` when the
    paper gives characters)."""

    tokens: float
    source: str
    chars: float | None = None


@dataclass(frozen=True)
class PlanSettings:
    """The ``planner`` section of the config, read into typed values."""

    prompt_tokens: dict[str, int]
    throughput: dict[str, Throughput]
    startup: dict[str, JobStartup]
    length_priors: dict[tuple[str, str, str], LengthPrior]  # keyed by (study, model, mode)
    chars_per_token: Sourced
    truncation_share: Sourced
    blindspot_saved_share: Sourced
    llamacpp_batch_speedup: Sourced
    probe_cue_tokens: Sourced
    prefix_cache_block_tokens: Sourced


def _positive_int(value: object, model: str, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"model '{model}': registry {key} must be a positive integer, got {value!r}")
    return value


def probe_prefill_tokens(backend: str, cue_tokens: float, block_tokens: float) -> float:
    """Prefill tokens of one probe pass (``prompt + trace[:cut] + cue``) of a fused generate-and-probe job.

    vLLM probes each batch of generations right after generating it (in waves), while prompt and trace
    are still in its prefix cache, which serves whole blocks of ``block_tokens``: a probe prefills the
    tokens of ``trace[:cut]`` after the last full cached block, ``block_tokens / 2`` on average, plus
    the cue. llama.cpp probes on the KV state the generation left: only the cue. (Without the prefix
    cache every probe would prefill all of ``prompt + trace[:cut] + cue`` again.) API models cannot
    probe; they get the cue too."""
    return block_tokens / 2 + cue_tokens if backend == "vllm" else float(cue_tokens)


def job_startup(model: str, backend: str, planner: dict) -> JobStartup:
    """Start-up seconds of one job of ``model``: ``planner.startup_s[model]``, else
    ``planner.default_startup_s[backend]``."""
    if model in planner["startup_s"]:
        entry, key = planner["startup_s"][model], "planner.startup_s"
    else:
        entry, key = planner["default_startup_s"][backend], f"planner.default_startup_s.{backend}"
    return JobStartup(float(entry["value"]), entry["source"], key)


def job_throughput(model: str, entry: dict, planner: dict) -> Throughput:
    """The throughput of one job of ``model``: the planner's tokens per second of one stream, times
    the registry entry's API concurrency (``extra.max_concurrency``, the backend's default otherwise),
    or times ``planner.llamacpp_batch_speedup`` for a llama.cpp entry with ``extra.n_parallel`` > 1.
    vLLM batches by itself: its throughput is already a job's. Probe passes cost
    :func:`probe_prefill_tokens` of the backend (``planner.probe_cue_tokens``,
    ``planner.prefix_cache_block_tokens``)."""
    backend = entry["backend"]
    per_stream = planner["tokens_per_s"].get(model, planner["default_tokens_per_s"][backend])
    extra = entry.get("extra") or {}
    factor, label = 1.0, "vLLM batching"
    if backend == "openai":
        streams = _positive_int(extra.get("max_concurrency", DEFAULT_MAX_CONCURRENCY), model, "extra.max_concurrency")
        factor, label = float(streams), f"{streams} streams"
    elif backend == "llamacpp":
        width = _positive_int(extra.get("n_parallel", 1), model, "extra.n_parallel")
        factor = float(planner["llamacpp_batch_speedup"]["value"]) if width > 1 else 1.0
        label = f"batch of {width}, x{factor:g}" if width > 1 else "1 sequence"
    probe = probe_prefill_tokens(
        backend, float(planner["probe_cue_tokens"]["value"]), float(planner["prefix_cache_block_tokens"]["value"])
    )
    return Throughput(float(per_stream), float(planner["prefill_ratio"]), probe, factor, label)


def plan_settings(planner: dict, registry: dict, models: set[str]) -> PlanSettings:
    """Typed planner settings: each model's job throughput (:func:`job_throughput`) and start-up
    (:func:`job_startup`), and the length priors in tokens (``chars`` divided by ``chars_per_token``,
    or ``tokens`` as given)."""
    chars_per_token = Sourced(float(planner["chars_per_token"]["value"]), planner["chars_per_token"]["source"])
    priors = {}
    for p in planner.get("length_priors", []):
        if "tokens" in p:
            prior = LengthPrior(float(p["tokens"]), p["source"])
        elif "chars" in p:
            prior = LengthPrior(float(p["chars"]) / chars_per_token.value, p["source"], float(p["chars"]))
        else:
            raise ValueError(
                f"planner.length_priors: {p['study']}/{p['model']}/{p['mode']} gives neither chars nor tokens"
            )
        priors[(p["study"], p["model"], p["mode"])] = prior
    sourced = {
        k: Sourced(float(planner[k]["value"]), planner[k]["source"])
        for k in (
            "truncation_continuation_share",
            "blindspot_saved_share",
            "llamacpp_batch_speedup",
            "probe_cue_tokens",
            "prefix_cache_block_tokens",
        )
    }
    return PlanSettings(
        prompt_tokens=dict(planner["prompt_tokens"]),
        throughput={m: job_throughput(m, registry[m], planner) for m in models},
        startup={m: job_startup(m, registry[m]["backend"], planner) for m in models},
        length_priors=priors,
        chars_per_token=chars_per_token,
        truncation_share=sourced["truncation_continuation_share"],
        blindspot_saved_share=sourced["blindspot_saved_share"],
        llamacpp_batch_speedup=sourced["llamacpp_batch_speedup"],
        probe_cue_tokens=sourced["probe_cue_tokens"],
        prefix_cache_block_tokens=sourced["prefix_cache_block_tokens"],
    )


def measured_mean_tokens(cache_dir: Path, model_id: str) -> float | None:
    """Mean completion tokens of the generations cached for a model, or None without a cache."""
    path = cache_dir / f"{model_id}.sqlite"
    if not path.exists():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            values = [
                json.loads(v).get("completion_tokens")
                for (v,) in conn.execute("SELECT value FROM entries WHERE kind = 'gen'")
            ]
    except sqlite3.Error:
        return None
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) / len(values) if values else None


# Study rows: requests, budget and jobs per (model, arm/mode). ``length`` (truncation rows) is the
# mode whose expected length a row takes and the share of it; ``early_stopping`` marks the calls the
# staged blindspot procedure does not make when a concept stops early. ``jobs`` counts the row's
# generation jobs as the rules cut them: each loads its engine once.


def fairness_rows(section: dict, shard_size: int = DEFAULT_SHARD_SIZE) -> list[dict]:
    """Both sides x both arms per record, and CDPG probes at the union of the depth grids; one job per
    dataset and shard of ``shard_size`` records (``fairness_generate``: both sides of a record in one job)."""
    depths = sorted({section["depths"], *section.get("sensitivity_depths", [])})
    fractions = {round(k / K, 9) for K in depths for k in range(K + 1)}
    rows = []
    for model in section["models"]:
        pairs = section["n_records"] * len(section["datasets"])
        jobs = len(section["datasets"]) * shard_count(section["n_records"], shard_size)
        rows.append(
            dict(
                study="fairness",
                model=model,
                arm_or_mode="think",
                jobs=jobs,
                requests=2 * pairs,
                budget=section["think_budget"] + section["answer_budget"],
                probe_passes=2 * pairs * len(fractions),
            )
        )
        rows.append(
            dict(
                study="fairness",
                model=model,
                arm_or_mode="nothink",
                jobs=jobs,
                requests=2 * pairs,
                budget=section["answer_budget"],
                probe_passes=2 * pairs,
            )
        )
    return rows


def position_rows(section: dict, truncation_share: float = 1.0, shard_size: int = DEFAULT_SHARD_SIZE) -> list[dict]:
    """One request per question and option ordering (4 cyclic shifts, or 24 with ``orderings: all``)
    per run, as the generation rules count them (``thinkbias.position.plan``), in shards of
    ``shard_size`` prompts per benchmark (one job each); truncation continuations at four offsets,
    each expected to generate ``truncation_share`` of its run's trajectory, in jobs of
    ``truncation.questions_per_shard`` questions."""
    rows, by_run, jobs = [], {}, {}
    for run in generation_runs(section):
        key = (run["model"], run["mode"])
        prompts = n_prompts(section, run["benchmark"], run["model"], run["mode"])
        by_run[key] = by_run.get(key, 0) + prompts
        jobs[key] = jobs.get(key, 0) + shard_count(prompts, shard_size)
    for (model, mode), requests in by_run.items():
        rows.append(
            dict(
                study="position",
                model=model,
                arm_or_mode=mode,
                jobs=jobs[(model, mode)],
                requests=requests,
                budget=section["max_tokens"][mode],
                probe_passes=0,
            )
        )
    trunc = section.get("truncation", {})
    n_questions = sum(b["n_questions"] for b in section["benchmarks"].values())
    for run in trunc.get("runs", []):
        n = min(trunc["n_questions"], n_questions)
        rows.append(
            dict(
                study="position",
                model=run["model"],
                arm_or_mode=f"{run['mode']}-truncation",
                jobs=truncation_shard_count(section),
                requests=n * len(trunc.get("offsets", [-0.15, -0.05, 0.05, 0.15])) * trunc["n_continuations"],
                budget=trunc["max_tokens"],
                probe_passes=0,
                length=(run["mode"], truncation_share),
            )
        )
    return rows


def blindspot_stages(
    n_inputs: int, n_clusters: int, k0: int, max_stages: int | None, last_stage: str = "all_inputs"
) -> int:
    """Stages of the staged procedure (``thinkbias.blindspot.clusters.stage_schedule``: stage s tests
    the ``k0 * 2**s`` nearest members of every cluster until the ``last_stage`` rule ends it) on
    ``n_inputs`` spread evenly over ``n_clusters``: a lower bound, as uneven clusters take more stages."""
    clusters = max(1, min(n_clusters, n_inputs))
    members = pd.DataFrame(
        [{"input_id": str(i), "cluster": i % clusters, "rank": i // clusters} for i in range(n_inputs)],
        columns=["input_id", "cluster", "rank"],
    )
    return len(stage_schedule(members, k0, max_stages, last_stage))


def blindspot_rows(section: dict, shard_size: int = DEFAULT_SHARD_SIZE) -> list[dict]:
    """Baseline responses plus both sides of every concept on every input of the last stage
    (exhaustive testing); the staged procedure stops most concepts early (``early_stopping``).
    One baseline job per model and task, one job per stage (:func:`blindspot_stages`); the rules do
    not shard them, so ``shard_size`` is unused. With the input prefilter on, its responses come first
    (``responses_per_input`` per input), the stages use the kept inputs and the baseline is served
    from the prefilter's cache."""
    rows = []
    concepts = max(
        len(section["curated"]["ids"]), section["hypothesis"]["min_concepts"] if section["hypothesis"]["enabled"] else 0
    )
    stages = section["stages"]
    prefilter = section.get("prefilter", {})
    for task in section["tasks"]:
        n_inputs = section["n_inputs_by_task"].get(task) or section["n_inputs"]
        steps = []
        if prefilter.get("enabled"):  # every input answered responses_per_input times; the stages use the kept
            steps.append(("prefilter", prefilter["responses_per_input"] * n_inputs, False, 1))
            n_inputs = min(n_inputs, prefilter.get("max_inputs") or n_inputs)
        n_stages = blindspot_stages(
            n_inputs,
            section["n_clusters"],
            stages["k0"],
            stages.get("max_stages"),
            stages.get("last_stage", "all_inputs"),
        )
        baseline = 0 if prefilter.get("enabled") else n_inputs  # the prefilter's first responses are the baseline's
        steps += [("baseline", baseline, False, 1), ("variations", 2 * concepts * n_inputs, True, n_stages)]
        for model in section["models"]:
            for step, requests, stops, jobs in steps:
                mode = f"{task}-{step}"
                rows.append(
                    dict(
                        study="blindspot",
                        model=model,
                        arm_or_mode=mode,
                        jobs=jobs,
                        requests=requests,
                        budget=section["target"]["max_tokens"],
                        probe_passes=0,
                        early_stopping=stops,
                    )
                )
    return rows


STUDY_ROWS = {"fairness": fairness_rows, "position": position_rows, "blindspot": blindspot_rows}


def _usd(price: dict | None, prompt: float, generated: float) -> float:
    if not price:
        return math.nan
    return (prompt * price["input_usd_per_mtok"] + generated * price["output_usd_per_mtok"]) / 1e6


def plan_table(config: dict, registry: dict, settings: PlanSettings, cache_dir: Path | None = None) -> pd.DataFrame:
    """The plan of every enabled study (see the module docstring for how each column is estimated);
    ``config`` holds the study sections and ``shard_size``."""
    rows = []
    shard_size = int(config["shard_size"])
    for study, make_rows in STUDY_ROWS.items():
        if not config.get(study, {}).get("enabled"):
            continue
        section_rows = (
            position_rows(config[study], settings.truncation_share.value, shard_size)
            if study == "position"
            else make_rows(config[study], shard_size)
        )
        for row in section_rows:
            model, budget = row.pop("model"), row.pop("budget")
            mode, share = row.pop("length", (row["arm_or_mode"], 1.0))
            stops = row.pop("early_stopping", False)
            measured = measured_mean_tokens(cache_dir, model) if cache_dir else None
            prior = settings.length_priors.get((study, model, mode))
            if measured is not None:
                # one mean over the model's cached answers, every mode pooled: capped like a prior
                per_request, source = min(measured * share, budget), "measured"
            elif prior is not None:
                per_request, source = min(prior.tokens * share, budget), "paper"
            else:
                per_request, source = budget, "budget"
            requests = row["requests"]
            expected_requests = round(requests * (1 - settings.blindspot_saved_share.value)) if stops else requests
            prompt, expected_prompt = (n * settings.prompt_tokens[study] for n in (requests, expected_requests))
            generated, expected_generated = requests * budget, expected_requests * per_request
            speed = settings.throughput[model]
            startup_s = row["jobs"] * settings.startup[model].seconds
            hours = (speed.seconds(prompt, generated, row["probe_passes"]) + startup_s) / 3600
            expected_hours = (
                speed.seconds(expected_prompt, expected_generated, row["probe_passes"]) + startup_s
            ) / 3600
            entry = registry[model]
            gpus = max(int(entry.get("gpus", 0)), 0) if entry["backend"] != "openai" else 0
            price = entry.get("price") if entry["backend"] == "openai" else None
            rows.append(
                {
                    **row,
                    "model": model,
                    "backend": entry["backend"],
                    "parallelism": speed.parallelism,
                    "expected_requests": int(expected_requests),
                    "prompt_tokens": int(prompt),
                    "expected_prompt_tokens": int(expected_prompt),
                    "generated_tokens": int(generated),
                    "expected_generated_tokens": int(round(expected_generated)),
                    "token_source": source,
                    "startup_hours": startup_s / 3600,
                    "hours": hours,
                    "expected_hours": expected_hours,
                    "gpu_hours": hours * gpus,
                    "expected_gpu_hours": expected_hours * gpus,
                    "usd": _usd(price, prompt, generated),
                    "expected_usd": _usd(price, expected_prompt, expected_generated),
                }
            )
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


def _totals_line(table: pd.DataFrame, label: str, prefix: str) -> str:
    usd = table[f"{prefix}usd"]
    priced = usd.notna()
    api = table["backend"] == "openai"
    unpriced = sorted(set(table.loc[api & ~priced, "model"]))
    if not priced.any():
        money = f"US$ {NO_COST} (no priced API model)"
    else:
        money = f"US$ {usd[priced].sum():,.0f}" + (
            f" for the priced API models ({len(unpriced)} unpriced)" if unpriced else ""
        )
    return (
        f"{label}: {int(table['jobs'].sum()):,} jobs, {int(table[f'{prefix}requests'].sum()):,} requests, "
        f"{int(table[f'{prefix}prompt_tokens'].sum()):,} prompt and "
        f"{int(table[f'{prefix}generated_tokens'].sum()):,} generated tokens, "
        f"{int(table['probe_passes'].sum()):,} probe passes, {table[f'{prefix}hours'].sum():,.1f} job-hours "
        f"({table['startup_hours'].sum():,.1f} of them start-up), "
        f"{table[f'{prefix}gpu_hours'].sum():,.1f} GPU-hours, {money}."
    )


def _display(table: pd.DataFrame) -> pd.DataFrame:
    """The plan's Markdown columns as text: counts with thousands separators, hours with one decimal,
    US$ without cents, "—" for a cost the registry gives no price for."""
    out = table[MARKDOWN_COLUMNS].copy()
    counts = ("jobs", "requests", "expected_requests", "generated_tokens", "expected_generated_tokens")
    for col in (*counts, "probe_passes"):
        out[col] = [f"{int(v):,}" for v in out[col]]
    for col in ("hours", "expected_hours", "gpu_hours", "expected_gpu_hours"):
        out[col] = [f"{v:,.1f}" for v in out[col]]
    for col in ("usd", "expected_usd"):
        out[col] = [NO_COST if pd.isna(v) else f"{v:,.0f}" for v in out[col]]
    return out


def early_stopping_line(table: pd.DataFrame, settings: PlanSettings) -> str | None:
    """The blindspot variation calls of exhaustive testing and those the staged procedure is
    expected to make; None without a blindspot study."""
    rows = table[(table["study"] == "blindspot") & table["arm_or_mode"].str.endswith("-variations")]
    if rows.empty:
        return None
    exhaustive, staged = int(rows["requests"].sum()), int(rows["expected_requests"].sum())
    return (
        f"Blindspot early stopping: {exhaustive:,} variation calls under exhaustive testing, {staged:,} expected "
        f"with staged testing ({exhaustive - staged:,} saved, {settings.blindspot_saved_share.value:.1%})."
    )


def plan_assumptions(table: pd.DataFrame, registry: dict, settings: PlanSettings) -> list[str]:
    """Every number the plan rests on, one line each with its source."""
    lines, speeds = [], {}
    for model in dict.fromkeys(table["model"]):
        speed, backend = settings.throughput[model], registry[model]["backend"]
        where = {
            "openai": "registry extra.max_concurrency, default "
            f"{DEFAULT_MAX_CONCURRENCY} (thinkbias/llm/openai_backend.py)",
            "llamacpp": "registry extra.n_parallel; batched ratio below"
            if speed.parallel_factor != 1
            else "registry extra.n_parallel unset or 1: one sequence at a time",
            "vllm": "vLLM batches the job's requests itself",
        }[backend]
        text = (
            f"{speed.generated_per_s:g} generated tokens/s per stream (planner.tokens_per_s or "
            f"default_tokens_per_s.{backend}), {speed.parallelism} ({where}); prompt tokens at "
            f"{speed.prefill_ratio:g}x that speed (planner.prefill_ratio)."
        )
        speeds.setdefault(text, []).append(model)
    lines += [f"{', '.join(models)}: {text}" for text, models in speeds.items()]
    startups = {}
    for model in dict.fromkeys(table["model"]):
        start = settings.startup[model]
        startups.setdefault((start.seconds, start.source, start.key), []).append(model)
    for (seconds, source, key), models in startups.items():
        jobs = int(table.loc[table["model"].isin(models), "jobs"].sum())
        lines.append(
            f"{', '.join(models)}: {seconds:g} s of start-up (engine load before the first token) in each of "
            f"{jobs:,} jobs ({source}; {key})."
        )
    cut = {
        "fairness": "fairness per dataset, arm and shard of shard_size records",
        "position": "position per benchmark, mode and shard of shard_size prompts (truncation: of "
        "truncation.questions_per_shard questions)",
        "blindspot": "blindspot one baseline job per task and one per stage (the stages of evenly sized "
        "clusters, a lower bound)",
    }
    lines.append(
        "Jobs: the generation jobs the rules cut the requests into, "
        f"{'; '.join(cut[s] for s in dict.fromkeys(table['study']))}; each pays its model's start-up once."
    )
    probed = sorted(set(table.loc[table["probe_passes"] > 0, "backend"]))
    if probed:
        cue, block = settings.probe_cue_tokens, settings.prefix_cache_block_tokens
        costs = ", ".join(f"{probe_prefill_tokens(b, cue.value, block.value):g} on {b}" for b in probed)
        lines.append(
            f"Tokens prefilled per probe pass (prompt + trace[:cut] + cue, less what is cached): {costs}. The cue's "
            f"{cue.value:g} tokens ({cue.source}; planner.probe_cue_tokens) and, on vLLM, half a prefix-cache block "
            f"of {block.value:g} tokens ({block.source}; planner.prefix_cache_block_tokens): vLLM probes each batch "
            "of generations while its traces are still in the prefix cache, which serves whole blocks; llama.cpp "
            "probes on the KV state the generation left. Without the cache every probe would prefill prompt + "
            "trace[:cut] + cue again."
        )
    for study in dict.fromkeys(table["study"]):
        lines.append(f"{study}: {settings.prompt_tokens[study]} prompt tokens per request (planner.prompt_tokens).")
    used = {
        (r.study, r.model, r.arm_or_mode.removesuffix("-truncation"))
        for r in table.itertuples()
        if r.token_source == "paper"
    }
    for key in sorted(used):
        prior = settings.length_priors[key]
        chars = f"{prior.chars:,.0f} characters = " if prior.chars is not None else ""
        lines.append(
            f"{'/'.join(key)}: expected {chars}{prior.tokens:,.0f} generated tokens per request "
            f"({prior.source}; planner.length_priors, capped at the budget)."
        )
    if any(settings.length_priors[key].chars is not None for key in used):
        lines.append(
            f"{settings.chars_per_token.value:g} characters per token for lengths given in characters "
            f"({settings.chars_per_token.source}; planner.chars_per_token)."
        )
    if (table["arm_or_mode"].str.endswith("-truncation") & (table["token_source"] != "budget")).any():
        lines.append(
            f"Truncation continuations generate {settings.truncation_share.value:.0%} of their run's "
            f"expected trajectory ({settings.truncation_share.source}; planner.truncation_continuation_share)."
        )
    measured = sorted(set(table.loc[table["token_source"] == "measured", "model"]))
    if measured:
        lines.append(f"Measured mean generated tokens of the cached answers: {', '.join(measured)}.")
    at_budget = []
    for study, rows in table.groupby("study", sort=False):
        budget = rows[rows["token_source"] == "budget"]
        if len(budget) == len(rows):
            at_budget.append(f"every {study} row")
        else:
            at_budget += [f"{r.model}/{r.arm_or_mode}" for r in budget.itertuples()]
    if at_budget:
        lines.append(
            f"Expected generated tokens = budget (no measurement, no reported length): {', '.join(at_budget)}."
        )
    if (table["study"] == "blindspot").any():
        lines.append(
            f"Staged testing saves {settings.blindspot_saved_share.value:.1%} of the variation calls of "
            f"exhaustive testing ({settings.blindspot_saved_share.source}; planner.blindspot_saved_share)."
        )
    if any(settings.throughput[m].parallel_factor != 1 for m in table.loc[table["backend"] == "llamacpp", "model"]):
        lines.append(
            f"Batched llama.cpp generation runs x{settings.llamacpp_batch_speedup.value:g} one sequence's "
            f"throughput ({settings.llamacpp_batch_speedup.source}; planner.llamacpp_batch_speedup)."
        )
    api = list(dict.fromkeys(table.loc[table["backend"] == "openai", "model"]))
    for model in api:
        price = registry[model].get("price")
        if price:
            lines.append(
                f"{model}: US$ {price['input_usd_per_mtok']:g} / {price['output_usd_per_mtok']:g} per million "
                f"input / output tokens ({price['source']}; registry price)."
            )
    unpriced = [m for m in api if not registry[m].get("price")]
    if unpriced:
        lines.append(f"No price in the registry (cost shown as {NO_COST}): {', '.join(unpriced)}.")
    lines.append(
        "Local models are costed in GPU-hours, not US$; API calls of judges, writers and embedders "
        "(blindspot autoraters) are not planned."
    )
    return [f"- {line}" for line in lines]


def plan_markdown(
    table: pd.DataFrame, registry: dict, settings: PlanSettings, paper_probe_passes: int | None = None
) -> str:
    """The plan as Markdown: the table, budget-bound and expected totals, the blindspot calls saved,
    and the assumptions with their sources; compares probe passes with the paper's stated count."""
    lines = [
        "# Run plan",
        "",
        markdown_table(_display(table)),
        _totals_line(table, "Budget bound (every request to its budget, exhaustive blindspot testing)", ""),
        "",
        _totals_line(table, "Expected (measured or reported lengths, staged blindspot testing)", "expected_"),
    ]
    stopping = early_stopping_line(table, settings)
    if stopping:
        lines += ["", stopping]
    fair = int(table.loc[table["study"] == "fairness", "probe_passes"].sum())
    if paper_probe_passes and fair:
        lines += [
            "",
            f"Fairness probe passes: {fair:,} here vs {paper_probe_passes:,} stated by the paper "
            "(the paper counts 10 depths per side; this plan probes the union of every depth grid "
            "in the config, including depth 0, and one nothink read per side).",
        ]
    lines += ["", "## Assumptions", "", *plan_assumptions(table, registry, settings)]
    return "\n".join(lines) + "\n"


def preparation_table(
    config: dict, registry: dict, manifest_models: set[str], download_mb_per_s: float, quantize_hours: float
) -> pd.DataFrame:
    """One row per job that prepares a local model's weights: the manifest's ``fetch``, a pinned
    download ``weights_<id>`` (hours at ``download_mb_per_s``), ``quantize_<id>`` on its GPUs
    (``quantize_hours`` each; the source's download is its own row; an entry with ``gpus: 0`` is
    quantized on the CPU and costs no GPU-hours) or a GGUF ``convert_<id>`` on the CPU."""
    rows = []
    studies = {s: config[s] for s in STUDY_ROWS if config.get(s, {}).get("enabled")}
    for model in prepared_models(studies, registry):
        entry = registry[model]
        if "quantize" in entry and int(entry.get("gpus", 1)) == 0:  # quantized on the CPU: no GPU-hours
            row = {"model": model, "job": quantize_rule(model), "size_gb": None, "gpus": 0}
            rows.append({**row, "hours": None, "gpu_hours": 0.0})
            continue
        if "quantize" in entry:
            gpus = int(entry.get("gpus", 1))
            rows.append(
                {
                    "model": model,
                    "job": quantize_rule(model),
                    "size_gb": None,
                    "gpus": gpus,
                    "hours": quantize_hours,
                    "gpu_hours": quantize_hours * gpus,
                }
            )
            continue
        if "convert" in entry:  # a CPU job of seconds to minutes: no GPU-hours
            rows.append(
                {
                    "model": model,
                    "job": convert_rule(model),
                    "size_gb": None,
                    "gpus": 0,
                    "hours": None,
                    "gpu_hours": 0.0,
                }
            )
            continue
        size = entry.get("size_gb")
        job = "fetch" if model in manifest_models else weights_rule(model)
        hours = round(size * 1000 / download_mb_per_s / 3600, 2) if size is not None else None
        rows.append({"model": model, "job": job, "size_gb": size, "gpus": 0, "hours": hours, "gpu_hours": 0.0})
    return pd.DataFrame(rows, columns=PREPARATION_COLUMNS)


def preparation_markdown(table: pd.DataFrame) -> str:
    """The model-preparation section of the plan, with its totals."""
    if table.empty:
        return "## Model preparation\n\nNo local model weights to prepare.\n"
    downloads = table[(table["job"] == "fetch") | table["job"].str.startswith("weights_")]
    quantizations = table[table["job"].str.startswith("quantize_")]
    return "\n".join(
        [
            "## Model preparation",
            "",
            markdown_table(table),
            f"Downloads: {len(downloads)} ({downloads['size_gb'].sum():.1f} GB); quantizations: "
            f"{len(quantizations)} ({quantizations['gpu_hours'].sum():.1f} GPU-hours).",
            "",
        ]
    )
