"""A warm start (``SupportsWarmStart.warm_start``): the older fit's weights continued on the
window of a grown log only; deterministic; which models declare it; and in an audit
(``remove-last-<window>+warm``) the stale fit shared with the from-scratch twin, stacked or
not, kept or not, with the same numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from recaudit import _progress  # noqa: E402
from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, MetricSpec,  # noqa: E402
                            ModelSpec, compare_perturbations, run_audit, summary,
                            trial_summary)
from recaudit.data import synthetic  # noqa: E402
from recaudit.errors import ConfigError, ModelError  # noqa: E402
from recaudit.models import SupportsWarmStart, create, warm_startable  # noqa: E402
from recaudit.perturb import remove_last  # noqa: E402

PARAMS = {"epochs": 1, "embedding_dim": 8, "hidden_dim": 8, "batch_size": 64}
LOG = synthetic(n_users=60, n_items=40, seed=3)
STALE, RECORD = remove_last(LOG, "10%")


def _stale(name: str = "gru4rec"):
    params = PARAMS if name != "sasrec" else {"epochs": 1, "embedding_dim": 8, "max_len": 20}
    return create(name, **params).fit(STALE, seed=0), params


def _warm(prev, params, log=LOG, new_from=RECORD.cut, seed=0, **kw):
    return create(prev.registered_name, **params).warm_start(prev, log, new_from=new_from,
                                                             seed=seed, **kw)


@pytest.mark.parametrize("name", ["gru4rec", "sasrec"])
def test_the_same_seed_gives_bit_identical_lists(name):
    prev, params = _stale(name)
    before = prev.score(LOG)
    a, b = _warm(prev, params, epochs=2), _warm(prev, params, epochs=2)
    ra, rb = a.rank(LOG, k=10), b.rank(LOG, k=10)
    np.testing.assert_array_equal(ra.items, rb.items)
    np.testing.assert_array_equal(ra.scores, rb.scores)
    np.testing.assert_array_equal(prev.score(LOG), before)   # the older fit is untouched
    assert not np.array_equal(a.score(LOG), before)           # and the warm one moved
    assert [h.get("phase") for h in a.history_] == [None, "warm", "warm"]
    # the targets trained are the window's rows that follow an earlier row of their user
    frame = LOG.to_df(codes=True)
    first = ~frame.user.duplicated()
    assert a.history_[-1]["targets"] == int((~first[RECORD.cut:]).sum())
    c = _warm(prev, params, epochs=2, seed=1)                 # another seed: another order
    assert not np.array_equal(c.score(LOG), a.score(LOG))


def test_epochs_and_lr_are_what_they_say():
    prev, params = _stale()
    one = _warm(prev, params, epochs=1).score(LOG)
    two = _warm(prev, params, epochs=2).score(LOG)
    slow = _warm(prev, params, epochs=1, lr=1e-6).score(LOG)
    assert not np.array_equal(one, two)
    # a tiny step barely leaves the older fit; the model's own lr moves further
    base = prev.score(LOG)
    assert np.abs(slow - base).max() < np.abs(one - base).max() / 10


def test_only_the_window_trains():
    """Rows before the window that are no window target's context change nothing: a user
    with no interaction in the window gets other items before it, bit for bit the same warm
    model; changing a window target's context does change it."""
    prev, params = _stale()
    users = np.unique(LOG.user[RECORD.cut:])
    idle = next(u for u in range(LOG.n_users) if u not in set(users) and (LOG.user == u).any())
    item = LOG.item.copy()
    mine = np.flatnonzero(LOG.user == idle)
    item[mine] = (item[mine] + 1) % LOG.n_items
    other = LOG.replace(item=item)
    a = _warm(prev, params).score(LOG)
    np.testing.assert_array_equal(_warm(prev, params, log=other).score(LOG), a)
    busy = users[0]
    last_before = np.flatnonzero((LOG.user == busy) & (np.arange(len(LOG)) < RECORD.cut))[-1]
    item = LOG.item.copy()
    item[last_before] = (item[last_before] + 1) % LOG.n_items
    assert not np.array_equal(_warm(prev, params, log=LOG.replace(item=item)).score(LOG), a)


def test_who_declares_it_and_bad_calls():
    assert isinstance(create("gru4rec"), SupportsWarmStart)
    assert [warm_startable(create(n)) for n in ("lstm", "gru4rec", "sasrec", "tisasrec")] \
        == [True] * 4
    assert not any(warm_startable(create(n)) for n in ("bert4rec", "latentcross", "jodie"))
    prev, params = _stale()
    with pytest.raises(ModelError, match="does not declare a warm start"):
        create("bert4rec").warm_start(prev, LOG, new_from=RECORD.cut, seed=0)
    with pytest.raises(ModelError, match="same class and configuration"):
        create("gru4rec", **{**PARAMS, "hidden_dim": 16}).warm_start(
            prev, LOG, new_from=RECORD.cut, seed=0)
    with pytest.raises(ModelError, match="window start inside the log"):
        _warm(prev, params, new_from=len(LOG))
    with pytest.raises(ModelError, match="epochs must be an integer"):
        _warm(prev, params, epochs=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        create("gru4rec", **PARAMS).warm_start(create("gru4rec", **PARAMS), LOG,
                                                new_from=RECORD.cut, seed=0)


# ---------------------------------------------------------------------- in an audit
DATA = DatasetSpec("synthetic", options={"n_users": 60, "n_items": 40, "seed": 3})
MODEL = ModelSpec("gru4rec", PARAMS)
PERTS = ("remove-last-60d", "remove-last-60d+warm", "seed-only")


def _numbers(path) -> pd.DataFrame:
    s = trial_summary(path)
    return s.drop(columns=["fit_seconds", "total_seconds", "rank_seconds",
                           "perturb_seconds"], errors="ignore") \
        .sort_values("trial_id").reset_index(drop=True)


def test_a_warm_audit_stacked_kept_and_alone_gives_the_same_numbers(tmp_path, monkeypatch):
    epochs: list[int] = []
    real = _progress.epoch

    def count(done, total, stop_by=None):
        epochs.append(done)
        real(done, total, stop_by)

    monkeypatch.setattr(_progress, "epoch", count)
    alone = AuditConfig(datasets=(DATA,), models=(MODEL,), perturbations=PERTS, seeds=(0, 1),
                        metrics=MetricSpec(k=5), output=str(tmp_path / "alone.duckdb"))
    run_audit(alone)
    # per seed: baseline, stale, warm's stale again and its one warm epoch, seed-only
    assert len(epochs) == 2 * 5
    stacked = alone.replace(output=str(tmp_path / "stacked.duckdb"),
                            executor=ExecutorSpec(stack=3))
    run_audit(stacked)
    pd.testing.assert_frame_equal(_numbers(alone.output), _numbers(stacked.output))
    # with kept fits the warm trial takes the stale fit of its from-scratch twin
    kept = alone.replace(output=str(tmp_path / "kept.duckdb"), perturbations=PERTS[:1],
                         executor=ExecutorSpec(keep_fits=True))
    run_audit(kept)
    epochs.clear()
    run_audit(kept.replace(perturbations=PERTS))
    assert epochs == [1, 1] + [1, 1]   # per seed: its warm epoch, then seed-only's fit
    pd.testing.assert_frame_equal(_numbers(kept.output), _numbers(alone.output))
    # the warm trial's perturbed side is the stale model: the same lists as its twin's
    rows = summary(alone.output).set_index("perturbation")
    assert rows.mrr_pert["remove-last-60d+warm"] == rows.mrr_pert["remove-last-60d"]
    assert rows.mrr_base["remove-last-60d+warm"] != rows.mrr_base["remove-last-60d"]
    cmp = compare_perturbations(alone.output, "remove-last-60d+warm", "remove-last-60d")
    assert len(cmp) == 1 and 0 <= cmp.p.iloc[0] <= 1


def test_a_warm_perturbation_refuses_a_model_without_warm_start(tmp_path):
    cfg = AuditConfig(datasets=(DATA,), models=(ModelSpec("bert4rec", {"epochs": 1}),),
                      perturbations=("remove-last-60d+warm",), seeds=(0,),
                      output=str(tmp_path / "a.duckdb"))
    with pytest.raises(ConfigError, match="bert4rec.*does not declare"):
        run_audit(cfg)
    assert not (tmp_path / "a.duckdb").exists() or \
        trial_summary(tmp_path / "a.duckdb").empty
