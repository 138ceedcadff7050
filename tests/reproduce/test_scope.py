"""Running part of a scale's grid (``--seeds``, ``--draws``, ``--models``): what runs, what the
record says."""

import json

import pytest

from recaudit.errors import ConfigError
from recaudit.reproduce import Scope, _oh2022
from recaudit.reproduce._recording import run


def test_scope_takes_the_first_seeds_and_fewer_draws():
    assert Scope(seeds=1, draws=5).take((0, 1, 2), 10) == ((0,), 5)
    assert Scope().take((0, 1, 2), 10) == ((0, 1, 2), 10)
    assert Scope(seeds=7, draws=20).take((0, 1), 3) == ((0, 1), 3)   # never more than asked


@pytest.mark.parametrize("kw", [{"seeds": 0}, {"draws": -1}, {"seeds": True}, {"models": ()}])
def test_scope_rejects_bad_values(kw):
    with pytest.raises(ConfigError):
        Scope(**kw)


def test_oh2022_paper_configs_with_a_scope(tmp_path):
    work = tmp_path / "oh2022-table4" / "paper"
    scope = Scope(seeds=1, draws=4, models=("latentcross", "jodie"))
    cfgs = _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS, _oh2022.LOO,
                            draws=10, reps=scope)
    assert [tuple(m.name for m in c.models) for c in cfgs] == [("latentcross@oh2022",),
                                                              ("jodie@oh2022",)]
    assert all(c.seeds == (0,) and c.draws == 4 for c in cfgs)
    with pytest.raises(ConfigError, match="lstmm"):
        _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS, _oh2022.LOO,
                         reps=Scope(models=("lstmm",)))


def test_the_record_says_what_part_of_the_grid_ran(tmp_path, monkeypatch):
    seen = {}

    def audits(workdir, scale, workers, reps, *a, **kw):
        seen["scope"] = reps
        return {}

    monkeypatch.setattr(_oh2022._common, "_run_audits", audits)
    rec = run("oh2022-table4", "paper", tmp_path, scope=Scope(seeds=1, draws=5))
    assert seen["scope"] == Scope(seeds=1, draws=5)
    assert rec["command"] == "recaudit reproduce run oh2022-table4 --scale paper --seeds 1 " \
                             "--draws 5"
    assert "part of the grid only" in rec["scale_note"] and "draws 5" in rec["scale_note"]
    stored = json.loads((tmp_path / "oh2022-table4" / "paper" / "record.json").read_text())
    assert stored["scope"] == {"seeds": 1, "draws": 5, "models": None}


def test_experiments_without_a_grid_refuse_a_scope(tmp_path):
    with pytest.raises(ConfigError, match="--seeds"):
        run("zhu2023-table3", "small", tmp_path, scope=Scope(seeds=1))


def test_no_train_records_what_the_store_holds(tmp_path, monkeypatch):
    import recaudit.audit
    from recaudit.reproduce import Scope

    calls = []
    monkeypatch.setattr(recaudit.audit, "run_audit", lambda cfg: calls.append(cfg))
    from recaudit.reproduce._oh2022 import _common

    out = _common._run_audits(tmp_path / "oh2022-table4" / "small", "small", 1,
                              Scope(seeds=1, draws=1, train=False), "synthetic",
                              ("latentcross",), ("random-delete",))
    assert calls == [] and dict(out) == {}      # nothing trained, nothing held: no measures
    assert Scope(train=False).reduced and Scope(train=False).flags() == " --no-train"


@pytest.mark.parametrize("complete", [True, False])
def test_a_no_train_note_says_whether_every_claim_was_measured(tmp_path, monkeypatch, complete):
    """A --no-train record made from a store that another experiment's run filled completely
    (Figures 6-7 read Table 3's trials) must not say it was stopped part-way."""
    from recaudit.reproduce import get

    exp = get("oh2022-figures6-7")
    keys = {k for c in exp.claims for k in c.keys}
    held = {k: 0.5 for k in keys} if complete else {}
    monkeypatch.setattr(_oh2022._common, "_run_audits", lambda *a, **kw: dict(held))
    rec = run("oh2022-figures6-7", "paper", tmp_path, scope=Scope(seeds=1, train=False))
    states = {c["state"] for c in rec["claims"]}
    assert ("not measured" in states) is not complete
    assert ("stopped part-way" in rec["scale_note"]) is not complete
    assert ("every claim's trials were there" in rec["scale_note"]) is complete


def test_a_perturbation_scope_keeps_the_experiments_order_and_trial_ids(tmp_path):
    """``--perturbations``: only the named perturbations are planned, in the experiment's
    order, and each keeps the trial id the whole grid gives it (so a run that trains the
    deciding comparisons first fills the same store the whole run reads)."""
    work = tmp_path / "oh2022-table3" / "paper"
    full = _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS,
                            _oh2022.LOO + _oh2022.REPLACE, reps=Scope(seeds=1))
    part = _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS,
                            _oh2022.LOO + _oh2022.REPLACE,
                            reps=Scope(seeds=1, perturbations=("casper-delete",
                                                               "random-delete")))
    assert [len(c.perturbations) for c in part] == [2, 2, 2]
    assert [c.perturbations[0] for c in part] == ["random-delete"] * 3   # experiment's order
    assert [c.perturbations[1] for c in part][1:] == ["casper-delete"] * 2
    assert part[0].perturbations[1] == {"name": "casper-delete", "max_len": 50}  # LSTM window

    def ids(configs):
        return {t.trial_id("fp") for c in configs for t in c.trials()}

    assert ids(part) < ids(full) and len(ids(part)) == 2 * 4   # 4 models, 2 perturbations
    tracin = _oh2022._configs(work, "paper", "foursquare", ("jodie",), _oh2022.LOO,
                              reps=Scope(perturbations=("tracin-delete",)))
    assert [c.perturbations for c in tracin] == [({"name": "tracin-delete",
                                                    "checkpoint_every": 10},)]
    # a scope that keeps none of an experiment's perturbations plans no (empty) audit
    assert _oh2022._configs(work, "paper", "foursquare", ("jodie",), _oh2022.LOO,
                            reps=Scope(perturbations=("casper-replace-random",))) == []


def test_a_perturbation_scope_is_checked_and_recorded(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="Did you mean 'casper-delete'") as err:
        Scope(perturbations=("caspr-delete",))
    assert err.value.key == "perturbations"
    with pytest.raises(ConfigError):
        Scope(perturbations=())
    seen = {}

    def audits(workdir, scale, workers, reps, *a, **kw):
        seen["scope"] = reps
        return {}

    monkeypatch.setattr(_oh2022._common, "_run_audits", audits)
    scope = Scope(seeds=1, perturbations=("casper-delete", "random-delete"), train=False)
    rec = run("oh2022-table3", "paper", tmp_path, scope=scope)
    assert seen["scope"] == scope
    assert rec["command"] == ("recaudit reproduce run oh2022-table3 --scale paper --seeds 1 "
                              "--perturbations casper-delete,random-delete --no-train")
    assert "perturbations casper-delete,random-delete" in rec["scale_note"]
    assert rec["scope"]["perturbations"] == ["casper-delete", "random-delete"]
    assert "perturbations" not in Scope(seeds=1).to_dict()   # earlier records compare equal
    with pytest.raises(ConfigError, match="--perturbations"):
        run("zhu2023-figure7", "small", tmp_path, scope=Scope(perturbations=("random-delete",)))
