"""Study-level products: flagged biases, funnel, costs and examples over every (model, task), the
funnel figure, and the Markdown report beside the paper's reported findings.

Computes `thinkbias.blindspot.report:render_report`, `thinkbias.blindspot.report:render_examples`,
`thinkbias.plots.blindspot:funnel_figure` and `thinkbias.blindspot.model_outputs:model_output_counts`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.model_outputs import model_output_counts
from thinkbias.blindspot.report import render_examples, render_report, table_markdown
from thinkbias.llm.metrics import engine_build_section
from thinkbias.plots.blindspot import funnel_figure
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml


def gather(paths):
    frames = [pd.read_csv(f) for f in paths]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.read_csv(paths[0]) if paths else pd.DataFrame()


with rule_logging(snakemake.log[0]) as logger:
    out = snakemake.output
    flagged = gather(snakemake.input.flagged)
    funnel = gather(snakemake.input.funnel)
    funnel["stage"] = funnel["stage"].fillna("").astype(str).str.replace(r"\.0$", "", regex=True)
    costs = gather(snakemake.input.costs)
    examples = []
    for f in snakemake.input.examples:
        df = pd.read_csv(f)
        model, task = Path(f).parts[-3], Path(f).parts[-2]
        examples.append(df.assign(model=model, task=task))
    examples = pd.concat(examples, ignore_index=True) if examples else pd.DataFrame()
    flagged.to_csv(out.flagged_csv, index=False)
    Path(out.flagged_md).write_text(table_markdown(flagged))
    funnel.to_csv(out.funnel_csv, index=False)
    costs.to_csv(out.costs_csv, index=False)
    Path(out.costs_md).write_text(table_markdown(costs))
    funnel_figure(funnel, out.funnel_png)
    Path(out.examples_md).write_text(render_examples(examples, flagged))
    inp = snakemake.input
    model_outputs = pd.concat(
        [
            model_output_counts(
                Path(replies).parent.name,
                pd.read_csv(replies),
                pd.read_parquet(generated),
                pd.read_csv(judgements),
                pd.read_parquet(variations),
            )
            for replies, generated, judgements, variations in zip(
                inp.replies, inp.generated, inp.judgements, inp.variations
            )
        ],
        ignore_index=True,
    )
    model_outputs.to_csv(out.model_outputs_csv, index=False)
    paper = read_yaml(snakemake.input.paper)
    stages = gather(snakemake.input.stages)
    rediscovery = pd.read_csv(inp.rediscovery[0]) if inp.rediscovery else None
    Path(out.report).write_text(
        render_report(flagged, funnel, costs, paper, snakemake.params.summary, stages, model_outputs, rediscovery)
        + "\n"
        + engine_build_section(snakemake.input.engines)
    )
    logger.info(f"{len(flagged)} flagged biases over {funnel[['model', 'task']].drop_duplicates().shape[0]} audits")
