# The audit: one registry model on all three studies (config `audit`, overlaid on the study sections in
# the Snakefile by thinkbias/audit/config.py) -> results/audit/<model>/report.md and the CSV tables it renders.
from thinkbias.audit.config import settings_rows

AUDIT_MODEL = config["audit"]["model"]
AUDIT_DIR = f"results/audit/{AUDIT_MODEL}" if AUDIT_MODEL else "results/audit/none"
AUDIT_TABLES = ("settings", "fairness", "position", "blindspot")


def audit_report_inputs(wildcards):
    """The study tables the report reads, for the studies the audit runs."""
    if not AUDIT_MODEL:
        raise ValueError(
            'target audit needs a model: --config audit=\'{"model": "<registry id>"}\' '
            "(config key 'audit.model' is null)"
        )
    inputs = {}
    if study_enabled("fairness"):
        for name in ("table2", "figure2", "parse_counts"):
            inputs[f"fairness_{name}"] = f"{FAIR_RUN}/tables/{name}.csv"
        inputs["fairness_paper"] = "resources/paper/fairness.yaml"
    if study_enabled("position"):
        inputs.update(
            position_summary=position_table_path("table2"),
            position_correlation=position_table_path("table1"),
            position_questions="results/position/questions.csv",
            position_paper="resources/paper/position.yaml",
        )
    if study_enabled("blindspot"):
        inputs.update(
            blindspot_flagged=f"{BS_DIR}/tables/flagged.csv",
            blindspot_funnel=f"{BS_DIR}/tables/funnel.csv",
            blindspot_paper="resources/paper/blindspot.yaml",
        )
        inputs.update({"blindspot_rediscovery": path for path in bs_rediscovery_files(("csv",))})
    return inputs


rule audit_report:
    input:
        unpack(audit_report_inputs),
    output:
        report=report(
            f"{AUDIT_DIR}/report.md",
            caption="../report/captions/audit/report.rst",
            category="audit",
            subcategory="report",
        ),
        tables=[f"{AUDIT_DIR}/{name}.csv" for name in AUDIT_TABLES],
    log:
        f"logs/audit/{AUDIT_MODEL or 'none'}/report.log",
    conda:
        "../envs/analysis.yaml"
    params:
        model=AUDIT_MODEL or "",
        settings=settings_rows(config, REGISTRY),
        position_modes=sorted({run["mode"] for run in config["position"]["runs"]}),
    script:
        "../scripts/audit/report.py"


rule audit:
    input:
        f"{AUDIT_DIR}/report.md",
