"""Modules imported on first use: ``stats = lazy_module("scipy.stats")`` binds a module object that
runs the module's import the first time one of its attributes is read.

Every Snakemake job is a fresh Python process, so a module imported at the top of a library module
is paid by every job that imports the library module, whether it calls the function that needs it
or not: ``scipy.stats`` costs about 1 CPU-s, ``scipy.special`` 0.3, against about 0.8 for pandas
and Snakemake's own script preamble together. The Markdown table of every table job, the
truncation job of the position study and the judge jobs of the blindspot study import statistics
they never compute.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """The module ``name`` (a dotted path), imported when one of its attributes is first read; the
    module itself if it is already imported. Raises ``ModuleNotFoundError`` at once when it is not
    installed."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module
