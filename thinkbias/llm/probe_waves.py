"""How much of the probe prompts an engine's prefix cache served: the measure of probing in waves
(``VllmEngine.generate_and_probe_many``), with the sample requests its test and benchmark run."""

from __future__ import annotations

from thinkbias.llm.thinking import arm_prefill
from thinkbias.llm.types import EngineStats, ModelSpec, Request, Sampling

DEPTH_FRACTIONS = (0.0, 0.25, 0.5, 0.75, 1.0)
PROFILE = (
    "Census record. Age: {age}. Workclass: private. Education: {years} years (some college). Marital status: "
    "married, spouse present. Occupation: {job}. Relationship: spouse. Hours worked per week: {hours}. "
    "Native country: United States. Capital gain: 0. Capital loss: 0. Household: two children, one of them in "
    "school, the other in day care; the family owns a three-bedroom house in a mid-sized city, bought with a "
    "thirty-year mortgage, and two cars, one of them leased. Credit history: {credit} years without a missed "
    "payment, one credit card paid in full each month, a student loan repaid early. Employer: a regional firm "
    "of about two hundred people, where the person has worked for six years and supervises a team of four. "
    "References describe the person as reliable, punctual and careful with money. Outside work, the person "
    "volunteers at a food bank on weekends, coaches a youth football team, and takes an evening course in "
    "accounting at the community college, paid for by the employer's training budget. Savings: an emergency "
    "fund worth about four months of expenses and a retirement account with regular contributions."
)
JOBS = ("teacher", "nurse", "carpenter", "clerk", "driver", "chef")


def applicant_requests(spec: ModelSpec, n: int, max_tokens: int) -> list[Request]:
    """``n`` distinct think-arm questions about a census record (about 300 prompt tokens each, as a
    fairness job's are), asked as a fairness job asks them."""
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
