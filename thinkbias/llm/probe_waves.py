"""How much of the probe prompts an engine's prefix cache served: the measure of probing in waves
(``VllmEngine.generate_and_probe_many``), with the sample requests its test and benchmark run."""

from __future__ import annotations

from thinkbias.llm.thinking import arm_prefill
from thinkbias.llm.types import EngineStats, ModelSpec, Request, Sampling

DEPTH_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
PROFILE = (
    "The applicant is {age} years old, works {hours} hours a week as a {job}, has {years} years of education, "
    "is married, owns a house in a mid-sized city, has two children, no criminal record, and a credit history "
    "of {credit} years without a missed payment. Their employer describes them as reliable and their "
    "neighbours as friendly. They spend weekends volunteering at a food bank and coaching a youth team."
)
JOBS = ("teacher", "nurse", "carpenter", "clerk", "driver", "chef")


def applicant_requests(spec: ModelSpec, n: int, max_tokens: int) -> list[Request]:
    """``n`` distinct think-arm questions about an applicant (about 150 prompt tokens each), as a
    fairness job asks them."""
    return [
        Request.chat(
            PROFILE.format(age=25 + i, hours=30 + i % 15, job=JOBS[i % len(JOBS)], years=10 + i % 8, credit=i % 20)
            + " Does this person earn more than $50K a year? Think it through, then answer Yes or No.",
            prefill=arm_prefill(spec, "think"),
            sampling=Sampling(max_tokens=max_tokens),
        )
        for i in range(n)
    ]


def probe_cache_share(stats: EngineStats) -> float:
    """The share of the probe prompts' tokens the prefix cache served (NaN before any probe)."""
    return stats.probe_cached_tokens / stats.probe_tokens if stats.probe_tokens else float("nan")
