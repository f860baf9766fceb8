"""Seeded sampling (thinkbias.data.sampling): machine-independent, order-independent, byte-identical."""

from __future__ import annotations

import hashlib
import logging

import numpy as np
import pandas as pd
import pytest

from thinkbias.data.sampling import sample_rows, stable_seed


@pytest.fixture
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "record_id": [f"r-{i:03d}" for i in range(200)],
            "x": rng.normal(size=200).round(6),
            "group": rng.choice(["a", "b"], size=200),
        }
    )


def csv_hash(df: pd.DataFrame) -> str:
    return hashlib.sha256(df.to_csv().encode()).hexdigest()


def test_same_arguments_give_byte_identical_samples(table):
    first = sample_rows(table, 25, seed=7, key_column="record_id", salt="adult")
    second = sample_rows(table.copy(), 25, seed=7, key_column="record_id", salt="adult")
    assert csv_hash(first) == csv_hash(second)
    assert len(first) == 25


def test_sample_does_not_depend_on_input_row_order(table):
    shuffled = table.sample(frac=1.0, random_state=3)
    assert csv_hash(sample_rows(table, 40, 7, "record_id", "s")) == csv_hash(
        sample_rows(shuffled, 40, 7, "record_id", "s")
    )


def test_order_is_the_sha256_of_salt_seed_key(table):
    expected = sorted(table["record_id"], key=lambda k: hashlib.sha256(f"s:7:{k}".encode()).hexdigest())[:10]
    assert sample_rows(table, 10, 7, "record_id", "s")["record_id"].tolist() == expected


def test_seed_and_salt_change_the_sample(table):
    base = set(sample_rows(table, 30, 7, "record_id", "s")["record_id"])
    assert base != set(sample_rows(table, 30, 8, "record_id", "s")["record_id"])
    assert base != set(sample_rows(table, 30, 7, "record_id", "t")["record_id"])


def test_a_larger_sample_extends_a_smaller_one(table):
    small = sample_rows(table, 10, 7, "record_id", "s")
    large = sample_rows(table, 50, 7, "record_id", "s")
    pd.testing.assert_frame_equal(small, large.head(10))


def test_n_above_the_table_size_returns_every_row_and_says_so(table, caplog):
    with caplog.at_level(logging.INFO, logger="thinkbias.data.sampling"):
        out = sample_rows(table, 10_000, 7, "record_id", "s")
    assert len(out) == len(table) and set(out["record_id"]) == set(table["record_id"])
    assert "taking all of them" in caplog.text


def test_duplicate_or_missing_keys_are_errors(table):
    dup = pd.concat([table, table.head(1)])
    with pytest.raises(ValueError, match="1 duplicate keys"):
        sample_rows(dup, 5, 7, "record_id", "s")
    with pytest.raises(KeyError, match="no column 'nope'"):
        sample_rows(table, 5, 7, "nope", "s")


def test_stable_seed_is_sha256_based_and_fits_63_bits():
    expected = int.from_bytes(hashlib.sha256(b"20260401:fairness:adult").digest()[:8], "big") >> 1
    assert stable_seed(20260401, "fairness", "adult") == expected
    assert stable_seed(20260401, "fairness", "adult") != stable_seed(20260401, "fairness", "compas")
    values = [stable_seed(i) for i in range(200)]
    assert all(0 <= v < 2**63 for v in values) and len(set(values)) == 200
    np.random.default_rng(values[0])  # usable as a numpy seed
