"""Caption files of the Snakemake report, made from each study's captions YAML.

Captions are written once, in resources/captions/<study>.yaml (key -> text). Snakemake wants one
reStructuredText file per ``report()`` output, rendered with Jinja2 and the job's ``snakemake``
object, so a rule with a ``{product}`` wildcard gets one file that picks the caption by wildcard.
``python -m thinkbias.report.captions`` rewrites report/captions/ from the YAML files; a test checks
that the committed files are current.
"""

from __future__ import annotations

import sys
from pathlib import Path

from thinkbias.yamlfile import read_yaml

# caption file (under report/captions/) -> (study, key template). A key template containing
# ``{name}`` is filled from the job's wildcard ``name``; otherwise it names one caption.
CAPTION_FILES: dict[str, tuple[str, str]] = {
    "fairness/table.rst": ("fairness", "tables/{product}"),
    "fairness/figure.rst": ("fairness", "figures/{figure}"),
    "fairness/report.rst": ("fairness", "report"),
    "position/table.rst": ("position", "tables/{position_table}.csv"),
    "position/figure1.rst": ("position", "figures/figure1_length_quartiles.png"),
    "position/figure2.rst": ("position", "figures/figure2_configurations.png"),
    "position/figure3.rst": ("position", "figures/figure3_truncation.png"),
    "position/figure4.rst": ("position", "figures/figure4_regimes.png"),
    "position/truncation_buckets.rst": ("position", "tables/truncation_buckets.csv"),
    "position/truncation_before_after.rst": ("position", "tables/truncation_before_after.csv"),
    "position/report.rst": ("position", "report.md"),
    "blindspot/flagged.rst": ("blindspot", "flagged"),
    "blindspot/funnel.rst": ("blindspot", "funnel"),
    "blindspot/costs.rst": ("blindspot", "costs"),
    "blindspot/examples.rst": ("blindspot", "examples"),
    "blindspot/report.rst": ("blindspot", "report"),
}

FOOTER = (
    "\n\n*Made by rule* ``{{{{ snakemake.rule }}}}`` *(seed {{{{ snakemake.config['seed'] }}}}); "
    "{study} settings:* ``{{{{ snakemake.config['{study}'] }}}}``\n"
)


def rst_text(text: str) -> str:
    """Caption prose as reStructuredText: ``|x|`` would be a substitution reference, so escape bars."""
    return text.strip().replace("|", "\\|")


def caption_rst(captions: dict[str, str], study: str, key_template: str) -> str:
    """The reStructuredText (with Jinja2) of one caption file."""
    if "{" not in key_template:
        body = rst_text(captions[key_template])
    else:
        prefix, rest = key_template.split("{", 1)
        wildcard, suffix = rest.split("}", 1)
        branches = []
        for key, text in captions.items():
            if key.startswith(prefix) and key.endswith(suffix) and len(key) > len(prefix) + len(suffix):
                value = key[len(prefix) : len(key) - len(suffix)]
                word = "if" if not branches else "elif"
                branches.append(f'{{% {word} snakemake.wildcards.{wildcard} == "{value}" %}}\n{rst_text(text)}\n')
        body = "".join(branches) + "{% endif %}"
    return body + FOOTER.format(study=study)


def write_caption_files(captions_dir: Path, out_dir: Path) -> list[Path]:
    """Write every caption file of ``CAPTION_FILES`` under ``out_dir``; return their paths."""
    loaded = {s: read_yaml(captions_dir / f"{s}.yaml") for s in {s for s, _ in CAPTION_FILES.values()}}
    written = []
    for name, (study, key) in CAPTION_FILES.items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(caption_rst(loaded[study], study, key))
        written.append(path)
    return written


if __name__ == "__main__":
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")
    for p in write_caption_files(root / "resources/captions", root / "report/captions"):
        print(p)
