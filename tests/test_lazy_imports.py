"""Modules bound by ``lazy_module`` import on first use, and the jobs' libraries that need no
statistics import none (each in a fresh interpreter, as a Snakemake job is)."""

import subprocess
import sys

import pytest

from tests.helpers import REPO
from thinkbias.lazy_imports import lazy_module


def fresh_python(code: str) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    return proc.stdout.strip()


def test_a_lazy_module_imports_when_an_attribute_is_first_read():
    out = fresh_python(
        "import sys\n"
        "from thinkbias.lazy_imports import lazy_module\n"
        "stats = lazy_module('scipy.stats')\n"
        "before = 'scipy.stats._stats_py' in sys.modules\n"
        "half = stats.norm.sf(0.0)\n"
        "import scipy.stats\n"
        "from scipy import stats as again\n"
        "print(before, 'scipy.stats._stats_py' in sys.modules, half, scipy.stats is stats, again is stats)"
    )
    assert out == "False True 0.5 True True"


def test_an_imported_module_is_returned_as_it_is_and_a_missing_one_fails_at_once():
    import math

    assert lazy_module("math") is math
    with pytest.raises(ModuleNotFoundError, match="no_such_module"):
        lazy_module("no_such_module")
    with pytest.raises(ModuleNotFoundError):
        lazy_module("scipy.no_such_module")


@pytest.mark.parametrize(
    "module",
    ["thinkbias.markdown", "thinkbias.position.truncation", "thinkbias.position.tables", "thinkbias.blindspot.stages"],
)
def test_job_libraries_load_scipy_statistics_only_when_they_compute(module):
    out = fresh_python(
        f"import sys, {module}\n"
        "print(sorted(m for m in ('scipy.stats._stats_py', 'scipy.special._ufuncs', 'scipy.optimize._minimize')"
        " if m in sys.modules))"
    )
    assert out == "[]", out
