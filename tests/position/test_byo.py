"""Validation of bring-your-own generations."""

import pandas as pd
import pytest

from thinkbias.position.byo import normalise_byo, read_table


def _table():
    return pd.DataFrame({"question_id": ["q", "q"], "permutation": [0, 1], "model": ["x", "x"], "mode": ["CoT", "cot"],
                         "full_text": ["The answer is (A)", None], "correct_position": ["b", 2]})


def test_normalise(tmp_path):
    out = normalise_byo(_table())
    assert out["mode"].tolist() == ["cot", "cot"] and out["benchmark"].tolist() == ["byo", "byo"]
    assert out["correct_position"].tolist() == ["B", "C"] and out["full_text"].tolist()[1] == ""
    path = tmp_path / "g.csv"
    _table().to_csv(path, index=False)
    assert len(normalise_byo(read_table(path))) == 2


def test_problems_are_named():
    bad = _table().assign(permutation=[0, 7], mode=["cot", "thinking"]).drop(columns=["model"])
    with pytest.raises(ValueError, match="missing column 'model'"):
        normalise_byo(bad)
    with pytest.raises(ValueError, match="permutation outside 0-3.*unknown modes"):
        normalise_byo(bad.assign(model="x"))
    with pytest.raises(ValueError, match="duplicate"):
        normalise_byo(_table().assign(permutation=[0, 0]))
    with pytest.raises(ValueError, match="correct_position"):
        normalise_byo(_table().assign(correct_position=["E", "A"]))


def test_think_tags_in_full_text_are_split():
    table = _table().assign(full_text=["<think>B? maybe.</think>\nI would go for C here.", "no tags here"])
    out = normalise_byo(table)
    assert out["full_text"].tolist() == ["B? maybe.\n\nI would go for C here.", "no tags here"]
    assert out["answer"].tolist() == ["I would go for C here.", None]
