"""Formatting and lint are part of the test suite, so drift fails the run like a broken test.

ruff (lint and format) and snakefmt read their settings from pyproject.toml; `snakemake --lint` may
only report the notes rules/common.smk justifies at its top.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

BIN = Path(sys.executable).parent
SNAKEMAKE_FILES = ["Snakefile", *sorted(str(p.relative_to(REPO)) for p in (REPO / "rules").glob("*.smk"))]
# The `snakemake --lint` notes rules/common.smk explains; any other note fails the test.
JUSTIFIED_LINTS = (
    "Mixed rules and functions in same snakefile",
    "Environment variable PYTHONPATH used but not asserted",
    "Param root is a prefix of input or output file but hardcoded",
    "Param bench_root is a prefix of input or output file but hardcoded",
    "Path composition with '+'",
)


def run_tool(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)


def test_ruff_lint_is_clean():
    result = run_tool(str(BIN / "ruff"), "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    result = run_tool(str(BIN / "ruff"), "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, "run `ruff format .`:\n" + result.stdout + result.stderr


def test_snakefmt_is_applied():
    result = run_tool(str(BIN / "snakefmt"), "--check", *SNAKEMAKE_FILES)
    assert result.returncode == 0, "run `snakefmt Snakefile rules/`:\n" + result.stdout + result.stderr


def lint_titles(output: str) -> list[str]:
    """Every note title of `snakemake --lint` text output ("    * <title>:"), line numbers dropped."""
    titles = re.findall(r"^    \* (.+?):$", output, flags=re.MULTILINE)
    return [re.sub(r" in line \d+\.?$", "", t).rstrip(".") for t in titles]


def test_snakemake_lint_reports_only_justified_notes():
    result = run_tool(sys.executable, "-m", "snakemake", "--lint")
    output = result.stdout + result.stderr
    titles = lint_titles(output)
    assert titles, "snakemake --lint printed no notes: its output changed, read it again\n" + output[-2000:]
    unexplained = sorted({t for t in titles if not t.startswith(JUSTIFIED_LINTS)})
    assert not unexplained, f"snakemake --lint notes not justified in rules/common.smk: {unexplained}"


@pytest.mark.parametrize(
    "title, expected",
    [
        ("Path composition with '+' in line 12.", "Path composition with '+'"),
        ("Mixed rules and functions in same snakefile.", "Mixed rules and functions in same snakefile"),
    ],
)
def test_lint_titles_drop_line_numbers(title, expected):
    output = f"Lints for snakefile rules/x.smk:\n    * {title}:\n      Explanation text.\n"
    assert lint_titles(output) == [expected]
