"""The prompts table: both sides per record, the question, shards of whole pairs."""

import pandas as pd

from thinkbias.fairness.prompts import ANSWER_INSTRUCTION, build_prompts, shard_slice, user_message
from thinkbias.tasks.templates import QUESTIONS


def compas(n):
    return pd.DataFrame(
        [
            dict(
                record_id=f"r{i}",
                age=30,
                race="White",
                juv_fel_count=0,
                juv_misd_count=0,
                juv_other_count=0,
                priors_count=i,
                c_charge_degree="F",
                two_year_recid=i % 2,
            )
            for i in range(n)
        ]
    )


def test_sides_labels_and_user_message():
    p = build_prompts("compas", compas(3))
    assert list(p.side[:2]) == ["alpha", "alpha_prime"] and list(p.attribute[:2]) == ["White", "Non-White"]
    assert list(p.label) == [0, 0, 1, 1, 0, 0]
    assert p.user.iloc[0] == user_message("compas", p.profile.iloc[0])
    assert QUESTIONS["compas"] in p.user.iloc[0] and p.user.iloc[0].endswith(ANSWER_INSTRUCTION)


def test_shards_hold_whole_pairs_in_order():
    p = build_prompts("compas", compas(5))
    shards = [shard_slice(p, i, 2) for i in range(3)]
    assert [len(s) for s in shards] == [4, 4, 2]
    assert pd.concat(shards).pair_id.tolist() == p.pair_id.tolist()
    assert shard_slice(p, 7, 2).empty
