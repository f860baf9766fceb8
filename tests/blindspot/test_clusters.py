"""Seeded clustering, representatives, ranks and the nested stage schedule."""

import numpy as np
import pandas as pd

from thinkbias.blindspot.clusters import cluster_inputs, hypothesis_batches, nearest_members, stage_plan, stage_schedule


def blobs():
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    x = np.vstack([c + rng.normal(0, 0.5, size=(20, 2)) for c in centres])
    ids = [f"i{j:03d}" for j in range(60)]
    return ids, x


def test_clusters_recover_blobs_and_are_reproducible():
    ids, x = blobs()
    a = cluster_inputs(ids, x, 3, seed=7)
    b = cluster_inputs(ids, x, 3, seed=7)
    pd.testing.assert_frame_equal(a, b)
    assert sorted(a.groupby("cluster").size().tolist()) == [20, 20, 20]
    # members of one blob share a cluster
    lab = dict(zip(a["input_id"], a["cluster"]))
    assert len({lab[i] for i in ids[:20]}) == 1
    assert a.groupby("cluster")["is_representative"].sum().tolist() == [1, 1, 1]
    assert (a[a["is_representative"]]["rank"] == 0).all()


def test_representative_is_the_member_nearest_the_centroid():
    ids = ["a", "b", "c", "d"]
    x = np.array([[0.0], [1.0], [2.0], [100.0]])
    m = cluster_inputs(ids, x, 2, seed=0)
    rep = m[m["is_representative"] & (m["input_id"].isin(["a", "b", "c"]))]
    assert rep["input_id"].tolist() == ["b"]
    ranks = dict(zip(m["input_id"], m["rank"]))
    assert ranks["b"] == 0 and {ranks["a"], ranks["c"]} == {1, 2}


def test_stage_schedule_is_nested_and_ends_with_all_inputs():
    ids, x = blobs()
    m = cluster_inputs(ids, x, 3, seed=7)
    plans = stage_schedule(m, k0=4)
    assert [p.n_inputs for p in plans] == [12, 24, 48, 60]
    assert plans[-1].is_last and not any(p.is_last for p in plans[:-1])
    for a, b in zip(plans, plans[1:]):
        assert set(a.input_ids) <= set(b.input_ids)
    assert stage_plan(m, 1, 4, max_stages=2).is_last
    assert len(nearest_members(m, 3)) == 9


def test_hypothesis_batches_are_seeded_batches_of_nearest_members():
    ids, x = blobs()
    m = cluster_inputs(ids, x, 3, seed=7)
    batches = hypothesis_batches(m, 3, 3, seed=1)
    assert len(batches) == 3 and all(len(b) == 3 for b in batches)
    assert sorted(sum(batches, [])) == sorted(nearest_members(m, 3))
    assert batches == hypothesis_batches(m, 3, 3, seed=1)
