"""A trial's identity: declared fields, ids pinned, a new defaulted field changing nothing, and
a store migrated when the identity rules change."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, MetricSpec, ModelSpec,
                            SplitSpec, TrialSpec, run_audit)
from recaudit.experiment import _identity, identity, prepare, trial_key
from recaudit.fuzz._study import FuzzTrial

TABLE = {"kind": "edit", "edit": "replace", "selector": "casper", "strategy": "popular"}
GRID = AuditConfig(
    models=(ModelSpec("lstm@oh2022", {"epochs": 3, "device": "cuda"}, title="LSTM"),
            ModelSpec("sasrec", {"heads": 2}, stabilise={"method": "ensemble", "n": 2})),
    perturbations=("random-delete", TABLE), seeds=(0, 3), draws=2,
    datasets=(DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30},
                          min_user_interactions=5, sample_users=30),),
    split=SplitSpec(), metrics=MetricSpec(k=5, p=0.8, depth=20))

#: (model, perturbation, seed, draw) -> (trial id, baseline key) as recaudit 4ad0108 (before
#: the identity was declared) computed them: stores written since keep resuming and merging
PINNED = {
    ("lstm@oh2022", "random-delete", 0, 0): ("c2d77b6467a74dd7dd6e", "e2004ee7d249415bacc9"),
    ("lstm@oh2022", "random-delete", 0, 1): ("8beed0e66a4ff82c5574", "e2004ee7d249415bacc9"),
    ("lstm@oh2022", "table", 0, 0): ("d44ff2d5713b77d0bd01", "e2004ee7d249415bacc9"),
    ("lstm@oh2022", "random-delete", 3, 0): ("a660c0ed4863a379efa2", "9838ab2e5cc383002d58"),
    ("lstm@oh2022", "table", 3, 0): ("82bf75d952aa16abd882", "9838ab2e5cc383002d58"),
    ("sasrec", "random-delete", 0, 0): ("52203c6b89d4f85e7426", "e0134164eea39cefc6c2"),
    ("sasrec", "random-delete", 3, 1): ("4920fa18c33027183095", "61ec4ad88ef96fc95f43"),
    ("sasrec", "table", 3, 0): ("7fee56fea8e64903d574", "61ec4ad88ef96fc95f43"),
}


def _key(t: TrialSpec) -> tuple:
    return (t.model.name, t.perturbation if isinstance(t.perturbation, str) else "table", t.seed,
            t.draw)


def test_trial_ids_are_pinned():
    trials = {_key(t): t for t in GRID.trials()}
    fp = prepare(GRID.datasets[0], GRID.split)[0].fingerprint()
    assert fp  # the synthetic data is generated, so its fingerprint is the same everywhere
    for key, (tid, base) in PINNED.items():
        assert trials[key].trial_id(fp) == tid, key
        assert trials[key].baseline_key(fp) == base, key
    # the whole ranking (metrics.depth = "full"), the default until the default depth of 100,
    # keeps its id; the default depth is another computation, so another id, of the same
    # baseline (its cached lists serve both)
    full = AuditConfig(models=(ModelSpec("gru4rec"),), metrics=MetricSpec(depth=None)).trials()[0]
    fp = prepare(full.dataset, full.split)[0].fingerprint()
    assert (full.trial_id(fp), full.baseline_key(fp)) == ("2b4d5f6c1ced5ff4df36",
                                                          "3ef13afa4252ccde9e93")
    default = AuditConfig(models=(ModelSpec("gru4rec"),)).trials()[0]
    assert (default.trial_id(fp), default.baseline_key(fp)) == ("c0d8ef3824880f033ca3",
                                                                "3ef13afa4252ccde9e93")


def test_fuzz_trial_ids_are_pinned():
    a = FuzzTrial(DatasetSpec("ml-100k", min_user_interactions=0),
                  ModelSpec("funksvd@shriver2018"), "AMR:10", 3)
    b = FuzzTrial(DatasetSpec("ml-100k", min_user_interactions=0),
                  ModelSpec("user-user@shriver2018", {"max_nbrs": 10}), "ARAND:1", 0, seed=2, k=5)
    assert (a.trial_id("abc123"), b.trial_id("abc123")) == ("ab7281aedece947707db",
                                                            "891e26bac62044846596")


def test_display_and_placement_are_not_identity():
    t = GRID.trials()[0]
    plain = dataclasses.replace(t, model=ModelSpec("lstm@oh2022", {"epochs": 3}))
    assert t.trial_id("fp") == plain.trial_id("fp")
    assert "title" not in identity(t)["model"] and "device" not in identity(t)["model"]["params"]
    assert "draw" not in identity(t) and identity(dataclasses.replace(t, draw=2))["draw"] == 2
    assert "stabilise" not in identity(t)["model"]


@dataclasses.dataclass(frozen=True)
class DatasetSpecLater(DatasetSpec):
    """DatasetSpec as a later release might have it: one more option, with a default."""

    dedupe: bool = False


def test_a_field_added_later_changes_an_id_only_when_it_is_set(monkeypatch):
    monkeypatch.setitem(_identity.DECLARED, "DatasetSpecLater", _identity.DECLARED["DatasetSpec"])
    t = GRID.trials()[0]
    later = dataclasses.replace(t, dataset=DatasetSpecLater(**dataclasses.asdict(t.dataset)))
    assert trial_key(later, "fp") == trial_key(t, "fp")
    used = dataclasses.replace(later, dataset=dataclasses.replace(later.dataset, dedupe=True))
    assert trial_key(used, "fp") != trial_key(t, "fp")
    assert identity(used)["dataset"]["dedupe"] is True
    # without declaring anything, every field of an undeclared class counts only when set
    assert identity(later)["dataset"] == identity(t)["dataset"]


def test_from_identity_gives_the_trial_back():
    for t in GRID.trials():
        assert TrialSpec.from_identity(t.to_dict()).trial_id("fp") == t.trial_id("fp")


def test_a_store_written_under_older_rules_is_migrated_and_resumes(tmp_path, monkeypatch):
    """Version 2 (for the test): a split's ``floor`` is left out while it holds its default.
    A store written under version 1 is opened by a run under version 2: its ids and baseline
    keys are rewritten, its cached baselines found under their new keys, nothing trains."""
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                    "hidden_dim": 8}, title="GRU"),),
                      datasets=(DatasetSpec("synthetic", options={"n_users": 30,
                                                                  "n_items": 20}),),
                      perturbations=("random-delete", "seed-only"),
                      metrics=MetricSpec(k=5), output=str(tmp_path / "a.duckdb"))
    run_audit(cfg)
    with AuditStore(cfg.output, read_only=True) as s:
        before = s.sql("SELECT trial_id, perturbation FROM trials ORDER BY perturbation")
        rows = len(s.sql("SELECT * FROM query_results"))
        assert s.meta()["trial_id_version"] == 1
    monkeypatch.setattr(_identity, "ID_VERSION", 2)
    monkeypatch.setitem(_identity.OMITTED_WHEN_DEFAULT, "SplitSpec", ("floor",))
    import recaudit.audit._baselines as baselines
    import recaudit.audit._runner as runner

    for module in (baselines, runner):   # a baseline's fit and a perturbed one
        monkeypatch.setattr(module, "_fit_rank", lambda *a, **k: pytest.fail("retrained"))
    run_audit(cfg)
    with AuditStore(cfg.output, read_only=True) as s:
        after = s.sql("SELECT trial_id, perturbation, baseline_key FROM trials "
                      "ORDER BY perturbation")
        assert s.meta()["trial_id_version"] == 2
        assert len(s.sql("SELECT * FROM query_results")) == rows
        q_ids = set(s.sql("SELECT DISTINCT trial_id FROM query_results").trial_id)
        plan_ids = set(s.sql("SELECT trial_id FROM plans").trial_id)
    assert not set(after.trial_id) & set(before.trial_id)     # every id changed ...
    assert q_ids == set(after.trial_id) <= plan_ids           # ... in every table
    fp = prepare(cfg.datasets[0], cfg.split)[0].fingerprint()
    assert set(after.trial_id) == {t.trial_id(fp) for t in cfg.trials()}
    assert set(after.baseline_key) == {t.baseline_key(fp) for t in cfg.trials()}
    pd.testing.assert_series_equal(before.perturbation, after.perturbation)


def test_a_fuzz_trial_comes_back_from_its_identity():
    a = FuzzTrial(DatasetSpec("ml-100k", min_user_interactions=0),
                  ModelSpec("user-user@shriver2018", {"max_nbrs": 10}), "ARAND:1", 4, seed=2, k=5)
    assert FuzzTrial.from_identity(a.to_dict()) == a
