"""What a Snakemake job pays before it works: the imports of each study script, lazy / eager.

    python benchmarks/bench_job_imports.py [--reps 3] [--tiny]

Every ``script:`` job is a fresh Python process that runs Snakemake's preamble and then the
script's top-level imports. For each script under scripts/ (the GPU smoke scripts aside), a fresh
interpreter imports ``snakemake.script`` and the modules the script's top-level ``import`` lines
name, and reports its own CPU seconds; two variants alternate (ABAB), each repetition:

- *lazy*: as the library is: scipy's statistics are bound by ``thinkbias.lazy_imports`` and import
  only when a job computes with them;
- *eager*: the same, with ``lazy_module`` replaced by ``importlib.import_module`` before anything
  imports it, so every module it binds imports with its importer, as a top-level
  ``from scipy import stats`` did (the library before lazy binding).

Prints per script the median CPU seconds of both and their ratio, and the ratio of the sums over
all scripts (goal <= 0.85: the jobs as a whole pay at least 15 % less to start). A job that then
computes statistics pays the difference when it does, so the saving is that of the jobs that
compute none. ``--tiny``: three scripts, one repetition (the ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import ast
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL = 0.85  # lazy / eager, summed over the job scripts
EAGER = "import importlib, thinkbias.lazy_imports as lazy; lazy.lazy_module = importlib.import_module\n"
CPU = "import resource; r = resource.getrusage(resource.RUSAGE_SELF); print(r.ru_utime + r.ru_stime)"


def job_scripts() -> list[Path]:
    """The scripts Snakemake jobs run (scripts/**/*.py without the GPU smoke scripts)."""
    return sorted(p for p in (REPO / "scripts").rglob("*.py") if "gpu" not in p.parts)


def top_level_imports(script: Path) -> list[str]:
    """The modules a script's top-level ``import`` / ``from ... import`` lines name, in order."""
    modules = []
    for node in ast.parse(script.read_text()).body:
        if isinstance(node, ast.Import):
            modules += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.append(node.module)
    return modules


def import_cpu_seconds(modules: list[str], eager: bool) -> float:
    """CPU seconds of a fresh interpreter importing ``snakemake.script`` and ``modules`` (with
    ``lazy_module`` made eager first when ``eager``)."""
    code = (EAGER if eager else "") + "".join(f"import {m}\n" for m in ("snakemake.script", *modules)) + CPU
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="three scripts, one repetition")
    args = ap.parse_args()
    scripts = job_scripts()
    scripts, reps = (scripts[:3], 1) if args.tiny else (scripts, args.reps)

    rows = []
    for script in scripts:
        modules = top_level_imports(script)
        seconds: dict[str, list[float]] = {"lazy": [], "eager": []}
        for rep in range(reps):
            for name in ("lazy", "eager")[:: 1 if rep % 2 == 0 else -1]:
                seconds[name].append(import_cpu_seconds(modules, eager=name == "eager"))
        lazy, eager = statistics.median(seconds["lazy"]), statistics.median(seconds["eager"])
        rows.append((str(script.relative_to(REPO)), lazy, eager))

    print(f"| script | lazy CPU s | eager CPU s | lazy / eager |  ({reps} rep(s), median)")
    print("|---|---|---|---|")
    for name, lazy, eager in rows:
        print(f"| {name} | {lazy:.2f} | {eager:.2f} | {lazy / eager:.3f} |")
    total_lazy, total_eager = sum(r[1] for r in rows), sum(r[2] for r in rows)
    ratio = total_lazy / total_eager
    print(
        f"all {len(rows)} job scripts: lazy {total_lazy:.1f} s / eager {total_eager:.1f} s = {ratio:.3f} "
        f"(goal <= {GOAL}: {'met' if ratio <= GOAL else 'missed'})"
    )


if __name__ == "__main__":
    main()
