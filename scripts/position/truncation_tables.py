"""Gather the continuations and write Figure 3's data: rates by absolute position bucket, and the
before- vs after-CCP change-rate test per configuration.

Computes `thinkbias.position.truncation:bucket_rates` and `thinkbias.position.truncation:before_after_test`.
"""

import pandas as pd

from thinkbias.markdown import markdown_table
from thinkbias.position.truncation import before_after_test, bucket_rates
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    parts = [pd.read_parquet(p) for p in snakemake.input]
    nonempty = [p for p in parts if len(p)]
    outcomes = (
        pd.concat(nonempty, ignore_index=True)
        if nonempty
        else pd.DataFrame(columns=["benchmark", "model", "mode", "cut", "side", "changed", "new_answer"])
    )
    outcomes.to_csv(snakemake.output.continuations, index=False)
    edges = snakemake.params.buckets
    buckets = (
        bucket_rates(outcomes, edges)
        if len(outcomes)
        else pd.DataFrame(
            columns=[
                "benchmark",
                "model",
                "mode",
                "bucket",
                "n",
                "n_answered",
                "change_rate",
                "n_changed",
                "toward_preferred_rate",
                "preferred_position",
            ]
        )
    )
    rows = []
    for key, g in outcomes.groupby(["benchmark", "model", "mode"], sort=False):
        rows.append(
            {
                **dict(zip(["benchmark", "model", "mode"], key)),
                **before_after_test(g),
                "n_continuations": len(g),
                "n_unparsed": int(g["new_answer"].isna().sum()),
            }
        )
    test = pd.DataFrame(
        rows,
        columns=[
            "benchmark",
            "model",
            "mode",
            "n_before",
            "changed_before",
            "rate_before",
            "n_after",
            "changed_after",
            "rate_after",
            "chi2",
            "p_value",
            "log10_p_value",
            "n_continuations",
            "n_unparsed",
        ],
    )
    logger.info(f"{len(outcomes)} continuations")
    buckets.to_csv(snakemake.output.buckets, index=False)
    test.to_csv(snakemake.output.test, index=False)
    with open(snakemake.output.markdown, "w") as fh:
        fh.write(
            "## Truncation: rates by absolute cut position\n\n"
            + markdown_table(buckets, missing="-")
            + "\n## Truncation: change rate before vs after CCP (chi-square, no continuity correction)\n\n"
            + markdown_table(test, missing="-")
        )
