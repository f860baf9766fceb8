# thinkbias: three studies of bias in reasoning LLMs, from raw public data to every table and figure.
from snakemake.utils import min_version

from thinkbias.audit.config import audited_config
from thinkbias.config import validate_config
from thinkbias.config_files import check_config_files
from thinkbias.config_refs import check_references

min_version("9.0")


configfile: "config/config.yaml"


# Snakemake merged the config files already, keeping the last of a key given twice: read each again
# so a duplicate key stops the run naming the file, the line and the key.
check_config_files(workflow.configfiles)
# One line per invalid key (path, value, what is expected); text values from --config are read by
# the schema's types, and every model id a study runs must be in the registry.
config.update(validate_config(config, "config/schema/config.schema.yaml"))
# an `audit` section sets the studies' keys for its one model (docs/audit.md) before any rule reads them
config.update(audited_config(config))
check_references(config)


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/models.smk"
include: "rules/fairness.smk"
include: "rules/position.smk"
include: "rules/blindspot.smk"
include: "rules/report.smk"
include: "rules/audit.smk"


rule all:
    default_target: True
    input:
        all_targets(),
