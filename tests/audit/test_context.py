"""What a perturbation reads besides the training log, as the audit runner prepares it: a model
fitted on demand, and TracIn's scores kept beside the baseline cache (one computation per
baseline, across the trials of a group and a resumed run)."""

import dataclasses

import numpy as np
import pytest

import recaudit.audit._context as context_module
import recaudit.perturb._tracin as tracin_module
from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, close_context, perturb_context
from recaudit.audit._runner import run_trial
from recaudit.experiment import ArrayCache, prepare
from recaudit.perturb import Context, parse

pytest.importorskip("torch")

DATA = DatasetSpec("synthetic", options={"n_users": 24, "n_items": 20, "n_clusters": 3,
                                         "mean_length": 10, "seed": 5})
MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                              "batch_size": 64})


def _trials(*perturbations):
    return AuditConfig(datasets=(DATA,), models=(MODEL,), perturbations=perturbations,
                       seeds=(1,)).trials()


class _Counter:
    """Wraps a function and counts its calls."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def test_a_context_fits_only_when_asked():
    fits = []
    ctx = Context(fit=lambda: fits.append(1) or len(fits))
    assert fits == []
    ctx_model = Context(model="fitted", fit=lambda: fits.append(1))
    assert ctx_model.fitted_model() == "fitted" and fits == []  # a given model wins
    assert Context().fitted_model() is None
    assert ctx.fitted_model() == 1
    computed = []
    assert np.array_equal(Context().remember("x", lambda: computed.append(1) or [1, 2]), [1, 2])
    Context().remember("x", lambda: computed.append(1) or [1, 2])
    assert computed == [1, 1]  # without a memo, computed every time


def test_tracin_scores_are_computed_once_per_baseline_and_give_the_same_edits(
        tmp_path, monkeypatch):
    fits = _Counter(context_module._fit)
    scores = _Counter(tracin_module.tracin_scores)
    monkeypatch.setattr(context_module, "_fit", fits)
    monkeypatch.setattr(tracin_module, "tracin_scores", scores)
    delete, replace = _trials("tracin-delete", "tracin-replace")
    cache = tmp_path / "baselines"

    first = run_trial(delete, cache_dir=cache)
    assert (fits.calls, scores.calls) == (1, 1)
    kept = [p.name for p in cache.iterdir() if ".tracin." in p.name]
    train = prepare(delete.dataset, delete.split)[1].train
    assert len(kept) == 1 and kept[0].startswith(delete.baseline_key(train.fingerprint()))
    second = run_trial(replace, cache_dir=cache)
    again = run_trial(delete, cache_dir=cache)  # a resumed run
    assert (fits.calls, scores.calls) == (1, 1)  # neither refitted nor rescored

    fresh = run_trial(delete, cache_dir=None)  # no cache: fitted and scored as before
    assert (fits.calls, scores.calls) == (2, 2)
    for got in (again, fresh):
        assert got.record["rows"] == first.record["rows"]
        assert got.queries.equals(first.queries)
    assert second.record["rows"] == first.record["rows"]  # same influential row, replaced
    assert second.record["kind"] == "replace" and first.record["kind"] == "delete"


def test_the_kept_scores_belong_to_the_baseline_and_the_checkpoint_setting(tmp_path):
    trial, = _trials("tracin-delete")
    split = prepare(trial.dataset, trial.split)[1]
    spec = parse("tracin-delete")
    ctx = perturb_context(spec, trial, split, base=None, cache=tmp_path)
    assert ctx.model is None and ctx.fit is not None and ctx.memo is not None
    model = ctx.fitted_model()
    assert ctx.fitted_model() is model  # the runner's fit runs once
    assert np.array_equal(ctx.remember("probe", lambda: np.arange(3.0)), np.arange(3.0))
    assert np.array_equal(ctx.remember("probe", lambda: np.zeros(3)), np.arange(3.0))
    other_seed = dataclasses.replace(trial, seed=2)
    ctx2 = perturb_context(spec, other_seed, split, base=None, cache=tmp_path)
    assert np.array_equal(ctx2.remember("probe", lambda: np.zeros(3)), np.zeros(3))
    with pytest.raises(ValueError, match="memo name"):
        ctx.remember("../escape", lambda: np.zeros(1))
    close_context(ctx)


def test_scores_kept_for_another_training_log_are_refused(tmp_path):
    trial, = _trials("tracin-delete")
    split = prepare(trial.dataset, trial.split)[1]
    spec = parse("tracin-delete")
    ctx = perturb_context(spec, trial, split, base=None, cache=tmp_path)
    ctx.remember("tracin", lambda: np.zeros(3))  # a wrong entry under the right key
    with pytest.raises(ValueError, match="made for another training log"):
        spec.perturb(split.train, np.random.default_rng(0), ctx)


def test_a_damaged_kept_entry_is_recomputed(tmp_path):
    trial, = _trials("tracin-delete")
    split = prepare(trial.dataset, trial.split)[1]
    ctx = perturb_context(parse("tracin-delete"), trial, split, base=None, cache=tmp_path)
    ctx.remember("probe", lambda: np.arange(4.0))
    entry, = tmp_path.glob("*.probe.*.npz")
    entry.write_bytes(entry.read_bytes()[:20])  # truncated, as by a full disk
    with pytest.warns(Warning, match="cannot be read|checksum"):
        assert np.array_equal(ctx.remember("probe", lambda: np.ones(4)), np.ones(4))
    assert isinstance(ArrayCache(tmp_path).get(entry.name[:-4]), dict)


def test_the_heartbeat_says_when_tracin_refits_and_scores_and_a_kept_score_skips_both(
        tmp_path):
    from recaudit import _progress as progress

    trial, = _trials("tracin-delete")
    split = prepare(trial.dataset, trial.split)[1]
    spec = parse("tracin-delete")
    phases = []

    def watch(fields):
        if "phase" in fields:
            phases.append(fields["phase"])

    for _ in range(2):
        ctx = perturb_context(spec, trial, split, base=None, cache=tmp_path)
        with progress.reporting(watch):
            spec.perturb(split.train, np.random.default_rng(0), ctx)
        close_context(ctx)
    refit, scores = "perturbing: checkpointed refit", "perturbing: TracIn scores"
    assert phases.count(refit) == 1 and phases.count(scores) == 1  # the second: kept
    assert phases.index(refit) < phases.index(scores)
