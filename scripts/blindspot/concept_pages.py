"""One evidence page per flagged concept, with its acceptance-rate figure, and their index.

Computes `thinkbias.blindspot.concept_pages:concept_pages` and `thinkbias.plots.blindspot:acceptance_figure`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.blindspot.concept_pages import concept_pages, page_name
from thinkbias.plots.blindspot import acceptance_figure
from thinkbias.workflow import rule_logging


def stage_frames(paths: list[str]) -> pd.DataFrame:
    """Every stage file of every audit (`<model>/<task>/stage-<s>/<file>`), with its model and task."""
    frames = [pd.read_parquet(p).assign(model=Path(p).parts[-4], task=Path(p).parts[-3]) for p in paths]
    frames = [f for f in frames if len(f)]
    empty = pd.DataFrame(columns=["model", "task", "concept_id", "input_id", "side"])
    return pd.concat(frames, ignore_index=True) if frames else empty


with rule_logging(snakemake.log[0]) as logger:
    inp = snakemake.input
    flagged = pd.read_csv(inp.flagged)
    stages = pd.concat([pd.read_csv(f) for f in inp.stages], ignore_index=True)
    concepts = pd.concat([pd.read_parquet(f).assign(task=Path(f).parent.name) for f in inp.concepts], ignore_index=True)
    pages = concept_pages(
        flagged, stages, concepts, stage_frames(inp.responses), stage_frames(inp.verdicts), snakemake.params.per_concept
    )
    out = Path(snakemake.output[0])
    for name, text in pages.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(text)
    for _, flag in flagged.iterrows():
        acceptance_figure(flag, str(out / page_name(flag["model"], flag["task"], flag["concept_id"], ".png")))
    logger.info(f"{len(pages) - 1} concept pages")
