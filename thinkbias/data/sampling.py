"""Seeded, machine-independent sampling of table rows and derived sub-seeds.

A row's place in a sample depends only on the sha256 of ``"salt:seed:key"`` for its key, never on
the input order, the platform or a random-number generator's implementation; so the same config gives
byte-identical samples everywhere, and growing ``n`` keeps every row of the smaller sample.
"""

from __future__ import annotations

import hashlib
import logging

import pandas as pd

log = logging.getLogger(__name__)

SEED_BITS = 63


def stable_seed(*parts: object) -> int:
    """A non-negative 63-bit integer derived from ``parts`` (joined by ':') through sha256.

    Derives sub-seeds from the master seed, e.g. ``stable_seed(master, "fairness", "adult")``;
    the value fits numpy's and Python's seeding and a signed 64-bit column.
    """
    text = ":".join(str(p) for p in parts)
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> (64 - SEED_BITS)


def rank_keys(keys: pd.Series, seed: int, salt: str) -> pd.Series:
    """The hex sha256 of ``"salt:seed:key"`` for every key (the sampling order, ascending)."""
    return keys.astype(str).map(lambda k: hashlib.sha256(f"{salt}:{seed}:{k}".encode("utf-8")).hexdigest())


def sample_rows(df: pd.DataFrame, n: int | None, seed: int, key_column: str, salt: str) -> pd.DataFrame:
    """The first ``n`` rows of ``df`` ranked by sha256("salt:seed:key"), in that rank order.

    ``key_column`` must hold unique keys (a stable record or item id). ``n`` larger than the table
    (or None) returns every row, ranked, and logs a note. The index is reset, so the result (and its
    ``to_csv``) is identical whatever the input row order.
    """
    if key_column not in df.columns:
        raise KeyError(f"sample_rows: no column '{key_column}' (columns: {', '.join(map(str, df.columns))})")
    keys = df[key_column]
    if keys.isna().any():
        raise ValueError(f"sample_rows: '{key_column}' has missing keys")
    duplicated = keys.astype(str).duplicated()
    if duplicated.any():
        raise ValueError(
            f"sample_rows: '{key_column}' has {int(duplicated.sum())} duplicate keys, e.g. {keys[duplicated].iloc[0]!r}"
        )
    if n is not None and n < 0:
        raise ValueError(f"sample_rows: n must be >= 0, got {n}")
    if n is None or n > len(df):
        log.info("sample_rows(%s): asked for %s rows of %d; taking all of them", salt, n, len(df))
        n = len(df)
    ranks = rank_keys(keys, seed, salt)
    # ties are impossible for unique keys; the key breaks them anyway so the order is total
    order = (
        pd.DataFrame({"rank": ranks.to_numpy(), "key": keys.astype(str).to_numpy()})
        .sort_values(["rank", "key"], kind="mergesort")
        .index[:n]
    )
    return df.iloc[order].reset_index(drop=True)
