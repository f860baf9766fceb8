"""Which models of a position run are served through a remote API and which are open-weight.

The paper's claim of increasing quartile PBS is over the open-weight configurations (its API anchor,
DeepSeek-R1, is left out), so the report needs every model's kind. It is, in order: the kind the
config declares (``position.model_kinds``, any registry id or bring-your-own name), ``api`` for a
registry entry with ``backend: openai``, ``open-weight`` for any other registry entry, and
``open-weight`` for a model nothing describes (a bring-your-own name without a declaration), marked
as not declared. :func:`model_kinds` returns the kind and its source per model and refuses a
declaration naming a model the run does not have.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import pandas as pd

KINDS = ("api", "open-weight")
CONFIG_KEY = "position.model_kinds"
API_BACKENDS = ("openai",)


class ModelKindError(ValueError):
    """A declaration of ``position.model_kinds`` that names no model of the run, or an unknown kind."""


def model_kinds(
    models: Iterable[str], declared: Mapping[str, str], registry_backends: Mapping[str, str | None]
) -> pd.DataFrame:
    """``model, kind, source`` for each model of ``models`` (sorted): declared in ``declared``
    (``position.model_kinds``), else by its ``registry_backends`` entry, else open-weight, not declared.

    Raises ``ModelKindError`` naming the key and the first offending names when ``declared`` names a
    model that is not among ``models`` or gives a kind other than api / open-weight."""
    run = sorted({str(m) for m in models})
    bad_kind = {m: k for m, k in declared.items() if k not in KINDS}
    if bad_kind:
        shown = ", ".join(f"{m}: {k!r}" for m, k in list(bad_kind.items())[:5])
        raise ModelKindError(f"config key '{CONFIG_KEY}': kinds other than {' or '.join(KINDS)}: {shown}")
    unknown = sorted(m for m in declared if m not in run)
    if unknown:
        raise ModelKindError(
            f"config key '{CONFIG_KEY}': {len(unknown)} model(s) not in this run: "
            f"{', '.join(repr(m) for m in unknown[:5])} (models of the run: {', '.join(run) or 'none'})"
        )
    rows = []
    for m in run:
        if m in declared:
            kind, source = declared[m], CONFIG_KEY
        elif m in registry_backends:
            backend = registry_backends[m]
            kind = "api" if backend in API_BACKENDS else "open-weight"
            source = f"registry (backend {backend})"
        else:
            kind, source = "open-weight", f"not declared ({CONFIG_KEY})"
        rows.append({"model": m, "kind": kind, "source": source})
    return pd.DataFrame(rows, columns=["model", "kind", "source"])


def api_models(kinds: pd.DataFrame | None) -> list[str]:
    """The models of a :func:`model_kinds` table whose kind is api."""
    if kinds is None or kinds.empty:
        return []
    return kinds.loc[kinds["kind"] == "api", "model"].tolist()


def kinds_note(kinds: pd.DataFrame | None, models: Iterable[str]) -> str:
    """The kinds of ``models`` in a sentence: "API, left out: m1 (source); open-weight: m2 (source)"."""
    if kinds is None or kinds.empty:
        return ""
    sub = kinds[kinds["model"].isin({str(m) for m in models})]
    parts = []
    for kind, label in (("api", "API, left out"), ("open-weight", "open-weight")):
        rows = sub[sub["kind"] == kind]
        if len(rows):
            parts.append(f"{label}: " + ", ".join(f"{r.model} ({r.source})" for r in rows.itertuples(index=False)))
    return "; ".join(parts)
