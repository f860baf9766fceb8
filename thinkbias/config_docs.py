"""config/README.md: the configuration reference, written from the schema and the embedded default.

Every key of config/schema/ (and of one model registry entry) gets a row: its path, type, schema
default, the value config/config.yaml gives it where that differs, and its description. The
reference is generated so it cannot drift from the schema:

    python -m thinkbias.config_docs .      # rewrite config/README.md

and a test checks that the committed file is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from thinkbias.config import load_schema
from thinkbias.markdown import markdown_table
from thinkbias.yamlfile import read_yaml

MISSING = object()
INTRO = """# Configuration reference

*Generated from `config/schema/` and `config/config.yaml` by `python -m thinkbias.config_docs .`;
do not edit by hand.*

A run reads `config/config.yaml` (the embedded default: offline, CPU, every study in miniature) and
any file given with `--configfile`, which overrides it key by key. The full configurations are
`config/fairness-full.yaml`, `config/fairness-appendix-d.yaml`, `config/position-full.yaml` and
`config/blindspot-full.yaml`. Every key below is validated against the schema before anything runs,
and every model id a study would run must be a valid entry of the registry (checked against its
schema, e.g. a `files[].sha256` of 64 hex digits) with a think arm where the study needs one (every
fairness model, and position runs in mode `reasoning`; a `thinking: none` model has none). A bad
config stops the run with one line per offending key: its path, its value and what is expected, e.g.
`config key 'fairness.n_records' = 'four': expected integer`,
`config key 'position.runs[1].model' = 'smollm2-135m-instruc': not a model of the registry config/models.yaml
(known: ...)` or
`config key 'position.runs[2].mode' = 'reasoning': model 'llama-3.1-8b-instruct-q4km' has thinking: none in
config/models.yaml, so it has no think arm for mode 'reasoning' (...)`.
A missing key takes its default, and a list a study works through (its models, runs, tasks) takes
at least one item: an empty one is refused at the check rather than left to fail a job.

Every YAML file the workflow reads (config files, the registry, the data manifest, resource files)
is refused when a mapping gives one key twice, with the file, the line and the key: YAML readers
otherwise keep the last value silently, so a second `position:` section would drop the first's runs.
Snakemake reads `--configfile` files itself before the workflow's own check runs: a duplicate key
is reported by the workflow, but a file Snakemake cannot read at all (a tab in the indentation, an
empty file) stops bare `snakemake` with its own message, which names no file ("Config file is not
valid JSON or YAML", "Config file must be given as JSON or YAML with keys at top level").
`python3 tb.py run --configfile FILE` checks the files first and names the file and the line
(`python -m thinkbias.config_files --configfile FILE` does the same check alone).

On the command line a top-level key is set as `snakemake --config shard_size=8`, a nested one by
giving its section as a mapping: `--config fairness='{"n_records": 40}'` (merged into the section;
its other keys stay). Snakemake hands nested values over as text; each is read as the type the
schema gives its key (`"40"` -> 40, `"false"` -> false, `"null"` -> null) wherever text is not
itself allowed. Dotted names (`--config fairness.n_records=40`) are refused by Snakemake itself
("Config entry must start with a valid identifier"), and a nested null where text is also allowed
(`fairness.predictions`) needs a `--configfile`.

Columns: the key (`a.b` for nesting, `a[].b` for the keys of each item of a list), its type, the
schema default, the value `config/config.yaml` sets where it differs from that default, and what it
means.
"""


def type_name(node: dict) -> str:
    """A short type label: ``integer``, ``string | null``, ``list of string``, ``one of a, b``, with
    the least number of items a list takes (``list of string (at least 1)``)."""
    label = _type_label(node)
    return f"{label} (at least {node['minItems']})" if "minItems" in node else label


def _type_label(node: dict) -> str:
    if "enum" in node:
        return "one of " + ", ".join(str(v) for v in node["enum"])
    kind = node.get("type", "any")
    label = " | ".join(kind) if isinstance(kind, list) else kind
    if kind == "array" and isinstance(node.get("items"), dict):
        inner = node["items"]
        return "list of " + ("objects" if inner.get("type") == "object" else type_name(inner))
    return label


def show(value: Any) -> str:
    """A value as it would be written in YAML flow style (empty for a missing value)."""
    if value is MISSING:
        return ""
    return json.dumps(value, ensure_ascii=False)


def key_rows(schema: dict, config: Any = MISSING, prefix: str = "") -> Iterator[dict]:
    """One row per key under ``schema`` (depth first), with the config's value where given."""
    for key, node in schema.get("properties", {}).items():
        path = f"{prefix}{key}"
        value = config.get(key, MISSING) if isinstance(config, dict) else MISSING
        default = node.get("default", MISSING)
        nested = "properties" in node
        items = node.get("items") if node.get("type") == "array" else None
        yield {
            "key": f"`{path}`",
            "type": type_name(node),
            "default": "" if nested else show(default),
            "config.yaml": "" if nested or value is MISSING or value == default else show(value),
            "description": " ".join(str(node.get("description", "")).split()),
        }
        if nested:
            yield from key_rows(node, value if value is not MISSING else {}, f"{path}.")
        elif isinstance(items, dict) and "properties" in items:
            yield from key_rows(items, MISSING, f"{path}[].")


def section(title: str, rows: list[dict]) -> str:
    """A titled Markdown table of key rows."""
    return f"## {title}\n\n" + markdown_table(pd.DataFrame(rows))


def config_reference(root: Path) -> str:
    """The whole reference for the repository at ``root``."""
    schema = load_schema(root / "config/schema/config.schema.yaml")
    config = read_yaml(root / "config/config.yaml")
    parts = [INTRO]
    top = {k: v for k, v in schema["properties"].items() if "properties" not in v}
    parts.append(section("Run-wide keys", list(key_rows({"properties": top}, config))))
    for key, node in schema["properties"].items():
        if key in top:
            continue
        about = " ".join(str(node.get("description", "")).split())
        rows = list(key_rows(node, config.get(key, {}), f"{key}."))
        parts.append(section(f"`{key}`", rows).replace("\n\n", f"\n\n{about}\n\n", 1))
    models = read_yaml(root / "config/schema/models.schema.yaml")
    about = " ".join(str(models.get("description", "")).split())
    parts.append(
        section("Model registry entry (`config/models.yaml`)", list(key_rows(models))).replace(
            "\n\n", f"\n\n{about}\n\n", 1
        )
    )
    for name, node in models.get("$defs", {}).items():  # extra of each backend: llamacpp_extra, ...
        backend = name.removesuffix("_extra")
        about = " ".join(str(node.get("description", "")).split()) + " Any other key is an error."
        parts.append(
            section(f"Registry `extra` of the `{backend}` backend", list(key_rows(node, MISSING, "extra."))).replace(
                "\n\n", f"\n\n{about}\n\n", 1
            )
        )
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    """Write config/README.md for the repository given as the only argument."""
    root = Path(argv[0] if argv else ".")
    (root / "config/README.md").write_text(config_reference(root))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
