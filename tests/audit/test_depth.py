"""The depth an audit compares (``metrics.depth``): what each measure reads, the baseline cache
at that depth (the smallest code type, compressed; entries of earlier versions cut to it or
trained again, with a reason), and the ranking chunk by chunk."""

from __future__ import annotations

import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, SplitSpec,
                            load_config)
from recaudit.audit._baselines import code_dtype
from recaudit.audit._context import cache_key
from recaudit.audit._runner import compare, run_trial
from recaudit.audit._study import AuditStudy, plan
from recaudit.audit._spec import DEFAULT_DEPTH
from recaudit.data import RankLists
from recaudit.errors import ConfigError, RecauditWarning
from recaudit.experiment import ArrayCache, prepare
from recaudit.models import rank_chunks, top_k_from_scores

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
TINY_MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                   "batch_size": 64})
#: the measures that read the first k items only, and those that read the compared depth
AT_K = ("frbo", "jaccard", "hit_base", "hit_pert", "ndcg_base", "ndcg_pert", "top_base",
        "top_pert")
AT_DEPTH = ("rbo", "rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "mrr_base",
            "mrr_pert")


# ------------------------------------------------------------------ what each measure reads
def _scores(seed: int, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """A baseline's and a perturbed model's scores: rounded (ties), the second a noisy copy
    of the first, so the lists agree at the top and part below it."""
    rng = np.random.default_rng(seed)
    base = np.round(rng.standard_normal((n, m)), 1).astype(np.float32)
    pert = np.round(base + 0.3 * rng.standard_normal((n, m)), 1).astype(np.float32)
    return base, pert


def _prefix_overlaps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``X_d = |a[:d] ∩ b[:d]|`` for d = 1..len, by sets (independent of the kernels)."""
    out, sa, sb = [], set(), set()
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        sa.add(x)
        sb.add(y)
        out.append(len(sa & sb))
    return np.array(out, dtype=np.float64)


@pytest.fixture(scope="module")
def split():
    return prepare(DatasetSpec("synthetic", options={"n_users": 60, "n_items": 400,
                                                     "seed": 2}), SplitSpec())[1]


@pytest.mark.parametrize("k, p", [(5, 0.9), (10, 0.8), (20, 0.95)])
def test_lists_cut_from_the_whole_ranking_give_every_measure_its_value_at_that_depth(
        split, k, p):
    n, m = len(split.queries), split.queries.n_items
    base, pert = _scores(k, n, m)
    full_a, full_b = top_k_from_scores(base, None), top_k_from_scores(pert, None)
    whole = compare(full_a, full_b, split, k, p)
    for depth in (k, k + 1, 3 * k, 150):
        cut_a, cut_b = full_a.top(depth), full_b.top(depth)
        # a list of (-score, item) order cut to d items is the list ranked at depth d, ties
        # broken the same way
        ranked_a, ranked_b = top_k_from_scores(base, depth), top_k_from_scores(pert, depth)
        np.testing.assert_array_equal(cut_a.items, ranked_a.items)
        np.testing.assert_array_equal(cut_b.items, ranked_b.items)
        at = compare(cut_a, cut_b, split, k, p)
        pd.testing.assert_frame_equal(at, compare(ranked_a, ranked_b, split, k, p))
        # the measures at k read k items: the whole ranking's values, bit for bit
        pd.testing.assert_frame_equal(at[list(AT_K)], whole[list(AT_K)])
        # the others read the compared depth: their definitions at d, computed here
        for q in range(0, n, 7):
            x = _prefix_overlaps(cut_a.items[q], cut_b.items[q])
            d = np.arange(1, depth + 1)
            assert at.rbo_trunc[q] == pytest.approx((1 - p) * np.sum(p ** (d - 1) * x / d),
                                                    abs=1e-12)
            assert at.average_overlap[q] == pytest.approx(np.mean(x / d), abs=1e-12)
            target = split.queries.target[q]
            for tag, items in (("base", cut_a.items[q]), ("pert", cut_b.items[q])):
                hit = np.flatnonzero(items == target)
                want = 1.0 / (hit[0] + 1) if len(hit) else 0.0
                assert at[f"mrr_{tag}"][q] == want
        # RBO's bounds at d hold the whole ranking's RBO, and close as d grows (p^d)
        assert (at.rbo_min <= whole.rbo + 1e-12).all() and (whole.rbo <= at.rbo_max + 1e-12).all()
        assert float((at.rbo_max - at.rbo_min).max()) <= 2 * p ** depth / (1 - p)


def test_the_default_depth_keeps_nearly_all_of_rbos_weight():
    assert MetricSpec().depth == DEFAULT_DEPTH == 100
    assert MetricSpec().p ** DEFAULT_DEPTH < 3e-5


# ------------------------------------------------------------------ the code type
@pytest.mark.parametrize("n_items, dtype", [(1, np.uint8), (256, np.uint8), (257, np.uint16),
                                            (65_535, np.uint16), (65_536, np.uint16),
                                            (65_537, np.int32), (10**6, np.int32)])
def test_the_smallest_code_type_that_holds_the_catalogue(tmp_path, n_items, dtype):
    got = code_dtype(n_items)
    assert got == np.dtype(dtype)
    assert np.iinfo(got).max >= n_items - 1          # the largest code fits
    smaller = {np.dtype(np.uint16): np.uint8, np.dtype(np.int32): np.uint16}.get(got)
    if smaller is not None:                           # and the next smaller type would not
        assert np.iinfo(smaller).max < n_items - 1
    codes = np.array([[0, n_items - 1]], dtype=np.int64)
    cache = ArrayCache(tmp_path)
    cache.put("k", compress=True, items=codes.astype(got))
    back = cache.get("k")["items"]
    assert back.dtype == got and np.array_equal(RankLists(back).items, codes)


# ------------------------------------------------------------------ the baseline cache
def _trial(depth, k=5):
    cfg = AuditConfig(models=(TINY_MODEL,), perturbations=("random-delete",), seeds=(0,),
                      datasets=(TINY_DATA,), metrics=MetricSpec(k=k, depth=depth))
    trial, _, key = plan(cfg)[0]
    return trial, cache_key(trial, key)


def _queries(outcome):
    return outcome.queries.reset_index(drop=True)


def test_a_trial_caches_the_depth_it_compares_in_the_smallest_type_compressed(tmp_path):
    trial, key = _trial(10)
    run_trial(trial, cache_dir=tmp_path)
    path = tmp_path / f"{key}.npz"
    with zipfile.ZipFile(path) as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    entry = ArrayCache(tmp_path).get(key)
    n_items = prepare(trial.dataset, trial.split)[1].queries.n_items
    assert n_items == 30 and entry["items"].dtype == np.uint8
    assert entry["items"].shape[1] == 10 and int(entry["depth"]) == 10


def test_an_earlier_versions_whole_lists_serve_a_trial_at_any_depth(tmp_path):
    """An entry as recaudit wrote it before the depth: int32, uncompressed, every item of
    every query's ranking, no depth recorded."""
    old, fresh = tmp_path / "old", tmp_path / "fresh"
    full, key = _trial(None)
    whole = run_trial(full, cache_dir=fresh / "full")
    entry = ArrayCache(fresh / "full").get(key)
    assert entry["items"].shape[1] == 30 and int(entry["depth"]) == 0
    ArrayCache(old).put(key, items=entry["items"].astype(np.int32),
                        fit_seconds=entry["fit_seconds"], rank_seconds=entry["rank_seconds"])
    for depth in (None, 5, 12):
        trial, _ = _trial(depth)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RecauditWarning)   # read, not trained again
            got = run_trial(trial, cache_dir=old, charge_baseline=False)
        want = run_trial(trial, cache_dir=fresh / str(depth), charge_baseline=False)
        pd.testing.assert_frame_equal(_queries(got), _queries(want))
        if depth is None:
            pd.testing.assert_frame_equal(_queries(got), _queries(whole))
        assert ArrayCache(old).get(key)["items"].dtype == np.int32   # left as it was


def test_a_cached_entry_too_shallow_for_the_trial_is_trained_again_and_says_why(tmp_path):
    trial, key = _trial(12)
    fresh = _queries(run_trial(trial, cache_dir=tmp_path / "fresh"))
    lists = ArrayCache(tmp_path / "fresh").get(key)["items"]
    old = ArrayCache(tmp_path / "old")
    old.put(key, items=lists[:, :8].astype(np.int32))           # an earlier version's cut
    with pytest.warns(RecauditWarning, match="earlier version.*8 items.*compares 12"):
        got = run_trial(trial, cache_dir=tmp_path / "old")
    pd.testing.assert_frame_equal(_queries(got), fresh)
    entry = old.get(key)
    assert entry["items"].shape[1] == 12 and int(entry["depth"]) == 12
    # this version's entry records its depth: asked at 12, it cannot serve the whole ranking
    full, _ = _trial(None)
    with pytest.warns(RecauditWarning, match="at depth 12.*whole catalogue"):
        run_trial(full, cache_dir=tmp_path / "old")
    assert int(old.get(key)["depth"]) == 0 and old.get(key)["items"].shape[1] == 30


def test_lists_shorter_than_asked_are_the_whole_ranking_and_serve_any_depth(tmp_path):
    deep, key = _trial(100)                   # 30 items: the whole catalogue is ranked
    run_trial(deep, cache_dir=tmp_path)
    assert ArrayCache(tmp_path).get(key)["items"].shape[1] == 30
    full, _ = _trial(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecauditWarning)
        got = run_trial(full, cache_dir=tmp_path, charge_baseline=False)
    want = run_trial(full, cache_dir=tmp_path / "fresh", charge_baseline=False)
    pd.testing.assert_frame_equal(_queries(got), _queries(want))


def test_resuming_a_store_of_whole_ranking_trials_at_a_depth_says_so(tmp_path):
    from recaudit.audit import run_audit

    base = dict(models=(TINY_MODEL,), perturbations=("random-delete",), seeds=(0,),
                datasets=(TINY_DATA,), output=str(tmp_path / "a.duckdb"))
    run_audit(AuditConfig(**base, metrics=MetricSpec(k=5, depth=None)))
    # the store keeps its config: another depth is another audit, refused with the way back
    with pytest.raises(ConfigError, match="depth = full") as err:
        AuditStudy(AuditConfig(**base, metrics=MetricSpec(k=5, depth=10))).plan()
    assert "--depth full" in err.value.hint
    # a store written before stores kept their config: the twins are found and said
    from recaudit.experiment import Store

    with Store(base["output"]) as st:
        st.set_meta("config", None)
    with pytest.warns(RecauditWarning, match='1 trial of this audit.*metrics.depth = "full"'):
        AuditStudy(AuditConfig(**base, metrics=MetricSpec(k=5, depth=10))).plan()
    with warnings.catch_warnings():           # the same depth: resumed, nothing said
        warnings.simplefilter("error", RecauditWarning)
        AuditStudy(AuditConfig(**base, metrics=MetricSpec(k=5, depth=None))).plan()


# ------------------------------------------------------------------ the configuration
CONFIG = """
[[models]]
name = "gru4rec"

[metrics]
k = 10
{depth}
"""


def test_depth_in_a_file_full_a_number_or_a_clear_error(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text(CONFIG.format(depth='depth = "full"'))
    cfg = load_config(path)
    assert cfg.metrics.depth is None and AuditConfig.from_dict(cfg.to_dict()) == cfg
    path.write_text(CONFIG.format(depth=""))
    assert load_config(path).metrics.depth == DEFAULT_DEPTH
    path.write_text(CONFIG.format(depth="").replace("k = 10", "k = 250"))
    assert load_config(path).metrics.depth == 250    # a larger k, no depth: the depth is k
    with pytest.raises(ConfigError, match="set depth >= 250"):
        MetricSpec(k=250)                             # in Python the depth is given
    for bad, words in (("depth = 5", "below metrics.k (10)"), ('depth = "fulll"', "'fulll'"),
                       ("depth = 0", "below metrics.k")):
        path.write_text(CONFIG.format(depth=bad))
        with pytest.raises(ConfigError) as err:
            load_config(path)
        msg = str(err.value)
        assert "'metrics.depth'" in msg and "line 7" in msg and words in msg, msg


def test_the_command_line_names_its_depth_flag(capsys):
    from recaudit.cli import main

    assert main(["audit", "--k", "10", "--depth", "5", "--dry-run"]) == 2
    assert "--depth 5: metrics.depth (5) is below metrics.k (10)" in capsys.readouterr().err


# ------------------------------------------------------------------ ranking chunk by chunk
@pytest.mark.parametrize("seed", range(12))
def test_ranking_chunk_by_chunk_gives_the_lists_of_the_whole_matrix(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 40)), int(rng.integers(1, 120))
    scores = rng.integers(-3, 4, (n, m)).astype(np.float32)      # ties
    scores[rng.random((n, m)) < 0.1] = -np.inf                   # seen items: rows differ
    scores[rng.random((n, m)) < 0.03] = np.nan
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 5))))
    chunks = np.split(scores, cuts)                               # empty chunks too
    for k in (1, 4, 30, m, None):
        want = top_k_from_scores(scores, k)
        for rows in (None, n):            # joined at the end, or written in place
            got = rank_chunks(iter(chunks), k, rows)
            np.testing.assert_array_equal(got.items, want.items)
            np.testing.assert_array_equal(got.scores, want.scores)
    with pytest.raises(ValueError, match="rows"):
        rank_chunks(iter(chunks), 3, n + 1)


def test_rank_lists_copy_what_could_change_and_keep_what_cannot():
    mine = np.array([[2, 0, 1]], dtype=np.int32)
    lists = RankLists(mine)
    mine[0, 0] = 9                                     # the caller's array, still writable
    assert lists.items[0, 0] == 2 and not lists.items.flags.writeable
    assert RankLists(lists.items).items is lists.items  # read-only and its own: kept
    view = lists.items[:, :2]                          # a view of it: copied
    assert RankLists(view).items is not view


@pytest.mark.parametrize("name, params", [
    ("gru4rec", {"exclude_seen": True}), ("sasrec", {}),
    ("jodie", {"exclude_seen": True}), ("latentcross", {"samples": "history"})])
def test_a_sequential_model_ranks_chunk_by_chunk_as_it_scores_whole(name, params):
    from recaudit.data import synthetic
    from recaudit.models import create
    from recaudit.models.testing import leave_last_out

    train, queries = leave_last_out(synthetic(seed=4, n_users=30, n_items=50))
    model = create(name, epochs=1, embedding_dim=8, **params).fit(train, seed=0)
    # several chunks, the last a short one; score() takes the same chunks (a matrix product's
    # last bits depend on how many rows it multiplies at once)
    model._chunk_size = lambda device: 7
    scores = model.score(queries)
    if params.get("exclude_seen"):
        scores[np.repeat(np.arange(len(queries)), queries.lengths()), queries.context_item] = \
            -np.inf
    for k in (3, 20, None):
        want = top_k_from_scores(scores, k)
        got = model.rank(queries, k)
        np.testing.assert_array_equal(got.items, want.items)
        np.testing.assert_array_equal(got.scores, want.scores)
