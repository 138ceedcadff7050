"""A stabilised model is a model spec: ids, validation, one store with the plain model, the
same edits, resume."""

import json

import pytest

from recaudit.audit import (AuditConfig, build_model, DatasetSpec, MetricSpec, ModelSpec, AuditStore, TrialSpec,
                            run_audit, trial_summary)
from recaudit.audit._spec import SplitSpec
from recaudit.errors import ConfigError
from recaudit.experiment import spec_id
from recaudit.stabilise import Finest, SeedEnsemble

TINY_DATA = DatasetSpec("synthetic", options={"n_users": 40, "n_items": 30, "n_clusters": 4,
                                              "mean_length": 14, "seed": 5})
PARAMS = {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8, "batch_size": 64}
PLAIN = ModelSpec("gru4rec", PARAMS)
FINEST = ModelSpec("gru4rec", PARAMS, {"method": "finest", "epochs": 2, "topk": 3})
ENSEMBLE = ModelSpec("gru4rec", PARAMS, {"method": "ensemble", "n": 2})


def test_plain_specs_keep_their_ids():
    assert PLAIN.to_dict() == {"name": "gru4rec", "params": PARAMS}
    assert ModelSpec.from_dict(PLAIN.to_dict()) == PLAIN
    trial = TrialSpec(TINY_DATA, SplitSpec(), PLAIN, 0, "random-delete", MetricSpec())
    by_hand = {"dataset": TINY_DATA.to_dict(), "split": SplitSpec().to_dict(),
               "model": {"name": "gru4rec", "params": PARAMS}, "seed": 0,
               "perturbation": "random-delete", "metrics": MetricSpec().to_dict()}
    assert trial.trial_id("fp") == spec_id(by_hand, "fp")


def test_stabilised_specs_are_models_of_their_own():
    assert ModelSpec.from_dict(FINEST.to_dict()) == FINEST
    assert FINEST.label == "gru4rec(batch_size=64,embedding_dim=8,epochs=2,hidden_dim=8)" \
                           "+finest(epochs=2,topk=3)"
    assert ENSEMBLE.label.endswith("+ensemble(n=2)")
    assert FINEST.base == PLAIN and PLAIN.base is PLAIN
    ids = set()
    for m in (PLAIN, FINEST, ENSEMBLE):
        t = TrialSpec(TINY_DATA, SplitSpec(), m, 0, "random-delete", MetricSpec())
        ids |= {t.trial_id("fp"), t.baseline_key("fp")}
    assert len(ids) == 6
    assert isinstance(build_model(FINEST), Finest)
    assert isinstance(build_model(ENSEMBLE), SeedEnsemble)
    assert len(build_model(ENSEMBLE).members) == 2


@pytest.mark.parametrize("table, key, match", [
    ({"method": "finest", "topk": -1}, "models[0].stabilise.topk", "topk"),
    ({"method": "finset"}, "models[0].stabilise.method", "Did you mean 'finest'"),
    ({"method": "ensemble", "combin": "scores"}, "models[0].stabilise.combin",
     "Did you mean 'combine'"),
    ({"n": 3}, "models[0].stabilise.method", "missing required key 'method'"),
    ("finest", "models[0].stabilise", "expected a table"),
])
def test_bad_stabilise_tables_name_the_key(table, key, match):
    with pytest.raises(ConfigError, match=match) as exc:
        AuditConfig.from_dict({"models": [{"name": "gru4rec", "stabilise": table}]})
    assert exc.value.key == key


def test_finest_on_jodie_is_a_config_error_naming_the_method():
    with pytest.raises(ConfigError, match="jodie") as exc:
        AuditConfig.from_dict({"models": [{"name": "jodie", "stabilise": {"method": "finest"}}]})
    assert exc.value.key == "models[0].stabilise.method"


def test_audit_measures_plain_and_stabilised_models_on_the_same_edits(tmp_path):
    cfg = AuditConfig(models=(PLAIN, FINEST, ENSEMBLE), seeds=(0,), datasets=(TINY_DATA,),
                      perturbations=("none", "random-delete", "seed-only"),
                      metrics=MetricSpec(k=5), output=str(tmp_path / "s.duckdb"))
    run_audit(cfg)
    s = trial_summary(cfg.output)
    assert len(s) == 9 and s.model.eq("gru4rec").all()
    assert s.model_label.nunique() == 3
    # "none": a stabilised model too is bit-identical run to run (same data, same seed)
    none = s[s.perturbation == "none"]
    assert (none.rbo == 1.0).all() and (none.mrr_base == none.mrr_pert).all()
    with AuditStore(cfg.output, read_only=True) as st:
        records = st.records()
        trials = st.trials()
    edits = {r.model_label: json.dumps(records[r.trial_id]["deleted"]) for r in
             trials[trials.perturbation == "random-delete"].itertuples()}
    assert len(set(edits.values())) == 1  # every variant lost the same interaction
    stab = trials.spec.map(lambda v: json.loads(v)["model"].get("stabilise"))
    assert stab.notna().sum() == 6
    # the FINEST reference lists were cached with the baselines and reused (one per seed)
    assert len(list((tmp_path / "s.duckdb.baselines").glob("finest-*.npz"))) == 1
    events = []
    run_audit(cfg, progress=lambda e, t, d, n: events.append((e, d, n)))
    assert events == [("skip", 9, 9)]
