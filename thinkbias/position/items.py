"""Question sample and the four cyclic permutations of each question (paper Sections 3.2 and 3.5).

Permutation ``s`` shifts every option ``s`` places to the right (cyclically), so the option shown at
position ``j`` is the original option ``(j - s) mod 4`` and the correct answer moves from position
``k`` to ``(k + s) mod 4``.
"""

from __future__ import annotations

import pandas as pd

from thinkbias.position.extract import OPTION_LETTERS

OPTION_COLUMNS = ("option_a", "option_b", "option_c", "option_d")
N_PERMUTATIONS = 4


def four_option_items(mcq: pd.DataFrame) -> pd.DataFrame:
    """Items with exactly four non-empty options and an answer in A-D."""
    ok = mcq["n_options"].astype(int).eq(4) & mcq["answer"].isin(OPTION_LETTERS)
    for col in OPTION_COLUMNS:
        ok &= mcq[col].notna() & mcq[col].astype(str).str.strip().ne("")
    return mcq.loc[ok].reset_index(drop=True)


def question_ids(items: pd.DataFrame) -> pd.Series:
    """Stable question id: ``<benchmark>:<item_id>``."""
    return items["benchmark"].astype(str) + ":" + items["item_id"].astype(str)


def cyclic_permutations(items: pd.DataFrame) -> pd.DataFrame:
    """Four rows per item (in item order, then permutation 0-3) with the shifted options.

    Columns: question_id, benchmark, item_id, subject, question, permutation, option_a..option_d
    (as shown), correct_position (letter), original_answer (letter).
    """
    rows = []
    for order, item in enumerate(items.itertuples(index=False)):
        original = [getattr(item, c) for c in OPTION_COLUMNS]
        k = OPTION_LETTERS.index(item.answer)
        for s in range(N_PERMUTATIONS):
            shown = [original[(j - s) % N_PERMUTATIONS] for j in range(N_PERMUTATIONS)]
            rows.append({
                "question_id": f"{item.benchmark}:{item.item_id}",
                "question_order": order,
                "benchmark": item.benchmark,
                "item_id": str(item.item_id),
                "subject": item.subject,
                "question": item.question,
                "permutation": s,
                **dict(zip(OPTION_COLUMNS, shown)),
                "correct_position": OPTION_LETTERS[(k + s) % N_PERMUTATIONS],
                "original_answer": item.answer,
            })
    return pd.DataFrame(rows)
