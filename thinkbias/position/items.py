"""Question sample and the orderings of each question's options (paper Sections 3.2 and 3.5).

``cyclic`` (the paper's design): permutation ``s`` shifts every option ``s`` places to the right
(cyclically), so the option shown at position ``j`` is the original option ``(j - s) mod 4`` and the
correct answer moves from position ``k`` to ``(k + s) mod 4``. Every option is then always followed
by the same neighbour, so an effect of what an option is shown next to cannot be told apart from
an effect of where it is shown.

``all``: all 24 orderings. Permutations 0-3 are the four cyclic shifts (so an ``all`` run holds the
``cyclic`` design as a subset), 4-23 the other 20 orderings in lexicographic order. Each option is
shown at each position 6 times and is followed by each other option equally often.
"""

from __future__ import annotations

import itertools

import pandas as pd

from thinkbias.position.extract import OPTION_LETTERS

OPTION_COLUMNS = ("option_a", "option_b", "option_c", "option_d")
N_PERMUTATIONS = 4
ORDERING_DESIGNS = ("cyclic", "all")


def option_orderings(design: str = "cyclic") -> list[tuple[int, ...]]:
    """The orderings of a design: entry ``j`` of an ordering is the original option shown at position ``j``."""
    cyclic = [tuple((j - s) % N_PERMUTATIONS for j in range(N_PERMUTATIONS)) for s in range(N_PERMUTATIONS)]
    if design == "cyclic":
        return cyclic
    if design == "all":
        return cyclic + [o for o in itertools.permutations(range(N_PERMUTATIONS)) if o not in cyclic]
    raise ValueError(f"unknown option ordering design '{design}' (expected one of {', '.join(ORDERING_DESIGNS)})")


def n_orderings(design: str = "cyclic") -> int:
    """Prompts per question: 4 (cyclic) or 24 (all)."""
    return len(option_orderings(design))


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
    """The paper's design: four rows per item, the cyclic shifts (see ``permutations_table``)."""
    return permutations_table(items, "cyclic")


def permutations_table(items: pd.DataFrame, design: str = "cyclic") -> pd.DataFrame:
    """One row per item and ordering of the design (in item order, then permutation 0-3 or 0-23).

    Columns: question_id, question_order, benchmark, item_id, subject, question, permutation,
    ordering (original letters as shown, e.g. "DABC"), option_a..option_d (as shown),
    correct_position (letter), original_answer (letter).
    """
    orderings = option_orderings(design)
    rows = []
    for order, item in enumerate(items.itertuples(index=False)):
        original = [getattr(item, c) for c in OPTION_COLUMNS]
        k = OPTION_LETTERS.index(item.answer)
        for s, ordering in enumerate(orderings):
            shown = [original[i] for i in ordering]
            rows.append(
                {
                    "question_id": f"{item.benchmark}:{item.item_id}",
                    "question_order": order,
                    "benchmark": item.benchmark,
                    "item_id": str(item.item_id),
                    "subject": item.subject,
                    "question": item.question,
                    "permutation": s,
                    "ordering": "".join(OPTION_LETTERS[i] for i in ordering),
                    **dict(zip(OPTION_COLUMNS, shown)),
                    "correct_position": OPTION_LETTERS[ordering.index(k)],
                    "original_answer": item.answer,
                }
            )
    return pd.DataFrame(rows)
