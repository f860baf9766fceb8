# thinkbias: three studies of bias in reasoning LLMs, from raw public data to every table and figure.
from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config/config.yaml"


validate(config, "config/schema/config.schema.yaml")


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/fairness.smk"
include: "rules/position.smk"
include: "rules/blindspot.smk"
include: "rules/report.smk"


rule all:
    default_target: True
    input:
        all_targets(),
