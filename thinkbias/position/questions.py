"""Per-question metrics and per-configuration summary (paper Section 3.3, Table 2 / Appendix B).

A configuration is one (benchmark, model, mode). Per question:
- ``pbs``: Eq. 1 over the permutations with an extracted answer (NaN when none);
- ``accuracy``: share of extracted permutations answered correctly;
- ``length``: mean trajectory length in characters over the question's permutations with a
  non-empty text (NaN when every text is empty);
- ``ccp``: mean CCP over the permutations where it is detectable (NaN when none);
- ``eff_sw_per_mention`` / ``eff_sw_per_kchar``: means over permutations (where defined).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from thinkbias.position.pbs import Norm, position_bias_score

CONFIG_KEYS = ["benchmark", "model", "mode"]


def question_metrics(records: pd.DataFrame, norm: Norm = "l2") -> pd.DataFrame:
    """One row per (benchmark, model, mode, question_id) from the extracted records."""
    keys = CONFIG_KEYS + ["question_id"]
    rows = []
    for key, grp in records.groupby(keys, sort=False):
        extracted = grp[grp["extracted"].astype(bool)]
        rows.append(
            {
                **dict(zip(keys, key)),
                "n_records": len(grp),
                "n_extracted": len(extracted),
                "pbs": position_bias_score(extracted["final_answer"], norm),
                "accuracy": float(extracted["is_correct"].mean()) if len(extracted) else np.nan,
                "length": float(grp["length_chars"].mean()),
                "ccp": float(grp["ccp"].mean()) if grp["ccp"].notna().any() else np.nan,
                "n_ccp": int(grp["ccp"].notna().sum()),
                "eff_sw_per_mention": float(grp["eff_sw_per_mention"].mean())
                if grp["eff_sw_per_mention"].notna().any()
                else np.nan,
                "eff_sw_per_kchar": float(grp["eff_sw_per_kchar"].mean())
                if grp["eff_sw_per_kchar"].notna().any()
                else np.nan,
                "n_mentions": float(grp["n_mentions"].mean()),
            }
        )
    return pd.DataFrame(rows)


def configuration_summary(records: pd.DataFrame, questions: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per configuration, mean accuracy, PBS, CCP, Eff-Sw (both scales), length, and the
    extraction rate as the paper's Appendix B defines it (the cascade yields a letter) beside the rate
    with the letter-frequency fallback, the fallback and failure counts and Ns. ``n_empty_text``
    counts the records with an empty text: they are among ``n_unparsed`` and left out of ``length``."""
    rows = []
    by_config = {k: g for k, g in questions.groupby(CONFIG_KEYS, sort=False)}
    for key, grp in records.groupby(CONFIG_KEYS, sort=False):
        q = by_config.get(key, questions.iloc[0:0])
        status = grp["extraction_status"].astype(str)
        rows.append(
            {
                **dict(zip(CONFIG_KEYS, key)),
                "n_questions": int(len(q)),
                "n_questions_pbs": int(q["pbs"].notna().sum()),
                "accuracy": float(q["accuracy"].mean()),
                "pbs": float(q["pbs"].mean()),
                "ccp": float(q["ccp"].mean()),
                "n_questions_ccp": int(q["ccp"].notna().sum()),
                "eff_sw_per_mention": float(q["eff_sw_per_mention"].mean()),
                "eff_sw_per_kchar": float(q["eff_sw_per_kchar"].mean()),
                "length": float(q["length"].mean()),
                "n_records": int(len(grp)),
                "extraction_rate": float(status.str.startswith("cascade").mean()),
                "extraction_rate_with_fallback": float(grp["extracted"].astype(bool).mean()),
                "n_fallback": int(status.eq("fallback").sum()),
                "n_unparsed": int(status.eq("none").sum()),
                "n_empty_text": int(grp["empty_text"].astype(bool).sum()) if "empty_text" in grp else 0,
            }
        )
    return pd.DataFrame(rows)
