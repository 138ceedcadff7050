"""run_until_decided: rounds give replicates only to undecided comparisons, stop when decided,
beyond the cap, at the cap or out of budget, and resume with a larger cap. The rounds' trials
are written by a stand-in runner (per-query values of known effects) so that the loop's
arithmetic is checked exactly; one real audit runs through the command line."""

from __future__ import annotations

import re
import zlib

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import AuditConfig, AuditStore, DatasetSpec, ModelSpec
from recaudit.audit._rounds import (comparison_name, comparisons, decisions, model_comparisons,
                                    nothing_to_decide, run_until_decided)
from recaudit.audit._spec import perturbation_label
from recaudit.cli import main
from recaudit.stats import LEGACY_RULE, SequentialPlan

Q = 200
_ZERO = ("rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "hit_base", "hit_pert",
         "ndcg_base", "ndcg_pert", "frbo", "jaccard", "mrr_base", "mrr_pert")


def _config(tmp_path, perts, sub="", models=("gru4rec",)):
    if sub:
        tmp_path = tmp_path / sub
        tmp_path.mkdir()
    return AuditConfig(datasets=(DatasetSpec("synthetic"),),
                       models=tuple(ModelSpec(m) for m in models),
                       perturbations=perts, seeds=(0, 1, 2), output=str(tmp_path / "r.duckdb"))


def _runner(effects, sd_seed, seed=0):
    """Writes the trials of a round: RBO = 0.5 + effect + a seed offset + query + noise;
    ``effects`` and ``sd_seed`` keyed by perturbation, or by (model label, perturbation)."""
    rng = np.random.default_rng(seed)
    users = 0.05 * rng.standard_normal(Q)
    calls = []

    def run(config):
        calls.append({perturbation_label(p): len(config.seeds) for p in config.perturbations})
        with AuditStore(config.output) as st:
            done = st.finished() if "trials" in st.tables() else set()
            for trial in config.trials():
                label = perturbation_label(trial.perturbation)
                model = trial.model.label
                tid = f"{model}-{label}-{trial.seed}"
                if tid in done:
                    continue
                # another model than gru4rec draws its own values (gru4rec's: as before)
                r = np.random.default_rng([zlib.crc32(label.encode()), trial.seed, seed,
                                           *([zlib.crc32(model.encode())]
                                             if model != "gru4rec" else [])])
                effect = effects.get((model, label), effects.get(label))
                sd = sd_seed.get((model, label), sd_seed.get(label))
                v = (0.5 + effect + sd * r.standard_normal() + users
                     + 0.01 * r.standard_normal(Q))
                z = np.zeros(Q)
                q = pd.DataFrame({"query": np.arange(Q), "user": np.arange(Q), "target": z,
                                  "rbo": v, **{c: z for c in _ZERO}})
                st.write_trial({"trial_id": tid, "dataset": "synthetic", "model": "gru4rec",
                                "model_label": trial.model.label, "perturbation": label, "seed": trial.seed,
                                "draw": 0, "n_queries": Q, "status": "done",
                                "total_seconds": 1.0}, q, None)
        return config.output
    return run, calls


def test_comparisons_of_an_audit():
    assert comparisons(["a", "b", "seed-only"]) == [("a", "seed-only"), ("b", "seed-only")]
    assert comparisons(["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    assert comparisons(["a", "b", "seed-only"], [("b", "a")]) == [
        ("a", "seed-only"), ("b", "seed-only"), ("b", "a")]
    assert comparisons(["a", "b", "seed-only"], [("a", "b")], grow="draws") == [("a", "b")]


def test_model_comparisons_of_an_audit():
    # per perturbation, each pair of models; the rerun floor aside; growing draws, no floor
    assert model_comparisons(["A", "B", "C"], ["random-delete", "seed-only", "rerun"]) == [
        ("random-delete", "A", "B"), ("random-delete", "A", "C"), ("random-delete", "B", "C"),
        ("seed-only", "A", "B"), ("seed-only", "A", "C"), ("seed-only", "B", "C")]
    assert model_comparisons(["A", "B"], ["random-delete", "seed-only"], grow="draws") == [
        ("random-delete", "A", "B")]
    assert model_comparisons(["A"], ["random-delete", "seed-only"]) == []


def test_two_models_are_compared_in_the_run_and_get_its_seeds(tmp_path):
    # one perturbation, two models: the run's one comparison is the models'; its seeds go
    # to both models' trials of the perturbation until it is decided
    perts = ("random-delete",)
    effects = {("gru4rec", "random-delete"): 0.0, ("sasrec", "random-delete"): 0.02}
    run, calls = _runner(effects, {"random-delete": 0.01})
    cfg = _config(tmp_path, perts, models=("gru4rec", "sasrec"))
    out = run_until_decided(cfg, SequentialPlan(cap=64), run=run)
    assert len(out.decisions) == 1
    row = out.decisions.iloc[0]
    assert (row.kind, row.perturbation, row.a, row.b, row.model) == (
        "models", "random-delete", "gru4rec", "sasrec", "")
    assert row.decision == "less" and row.look > 3 and out.stopped == "decided"
    assert comparison_name(row) == "gru4rec vs sasrec under random-delete"
    with AuditStore(out.store, read_only=True) as st:
        held = st.trials().groupby("model_label").seed.nunique()
    assert held["gru4rec"] == held["sasrec"] == row.look
    # with a floor, the family holds both: each model's perturbation against its floor and
    # the models under each perturbation (the floor's included: which one a seed moves less)
    perts = ("random-delete", "seed-only")
    run, _ = _runner({"random-delete": 0.3, "seed-only": 0.0}, {"random-delete": 0.01,
                                                               "seed-only": 0.01})
    out = run_until_decided(_config(tmp_path, perts, "floor", models=("gru4rec", "sasrec")),
                            SequentialPlan(cap=8), run=run)
    assert [comparison_name(r) for r in out.decisions.itertuples()] == [
        "random-delete vs seed-only (gru4rec)", "random-delete vs seed-only (sasrec)",
        "gru4rec vs sasrec under random-delete", "gru4rec vs sasrec under seed-only"]


def test_a_run_with_nothing_to_decide_is_refused(tmp_path):
    from recaudit.errors import ConfigError

    run, calls = _runner({"random-delete": 0.0}, {"random-delete": 0.01})
    for perts in (("random-delete",), ("seed-only",)):
        cfg = _config(tmp_path, perts)
        assert "nothing to decide" in nothing_to_decide(cfg)
        with pytest.raises(ConfigError, match="nothing to decide"):
            run_until_decided(cfg, SequentialPlan(), run=run)
    assert calls == []  # refused before any round
    assert nothing_to_decide(_config(tmp_path, ("random-delete",),
                                     models=("gru4rec", "sasrec"))) is None
    # growing draws, a floor gives no comparison
    cfg = _config(tmp_path, ("random-delete", "seed-only"))
    assert nothing_to_decide(cfg) is None
    assert "draws" in nothing_to_decide(cfg, grow="draws")


def test_cli_refuses_until_decided_with_nothing_to_decide(tmp_path, capsys):
    code = main(["audit", "--dataset", "synthetic", "-p", "random-delete", "--until-decided",
                 "-o", str(tmp_path / "n.duckdb")])
    err = capsys.readouterr().err
    assert code == 2 and "nothing to decide" in err and "-p seed-only" in err
    assert not (tmp_path / "n.duckdb").exists()


def test_replicates_go_only_to_undecided_comparisons(tmp_path):
    perts = ("random-delete", "casper-delete", "seed-only")
    run, calls = _runner({"random-delete": 0.3, "casper-delete": 0.02, "seed-only": 0.0},
                         {"random-delete": 0.01, "casper-delete": 0.01, "seed-only": 0.01})
    out = run_until_decided(_config(tmp_path, perts), SequentialPlan(cap=48), run=run)
    d = out.decisions.set_index("a")
    assert d.loc["random-delete", "decision"] == "greater"
    early = d.loc["random-delete", "look"]
    assert early <= 6                                   # decided at an early look
    assert d.loc["casper-delete", "decision"] == "greater"
    assert d.loc["casper-delete", "look"] > early       # needed more rounds
    assert out.stopped == "decided" and len(out.rounds) > 1
    # once decided, random-delete received no seed: the others did
    assert all(c.get("random-delete", early) <= early for c in calls)
    with AuditStore(out.store, read_only=True) as st:
        held = st.trials().groupby("perturbation").seed.nunique()
    assert held["random-delete"] == early
    assert held["casper-delete"] == held["seed-only"] == d.loc["casper-delete", "look"]
    # the rounds are in the store, each with what it trained
    from recaudit.experiment import Store

    with Store(out.store, read_only=True) as st:
        kept = st.meta()["rounds"]
    assert [r["round"] for r in kept] == list(range(1, len(out.rounds) + 1))
    assert kept[-1]["targets"]["casper-delete"] == d.loc["casper-delete", "look"]


def test_a_null_stops_beyond_the_cap_and_a_margin_decides_it(tmp_path):
    perts = ("random-delete", "seed-only")
    effects = {"random-delete": 0.0, "seed-only": 0.0}
    sd = {"random-delete": 0.002, "seed-only": 0.002}
    run, calls = _runner(effects, sd)
    out = run_until_decided(_config(tmp_path, perts), SequentialPlan(cap=32), run=run)
    row = out.decisions.iloc[0]
    assert row.decision == "undecided" and row.status == "futility"
    # the null stops for futility before the cap is spent, and says what is still allowed
    assert out.stopped == "futility" and max(max(c.values()) for c in calls) < 32
    assert "stopped for futility" in row.reason and "still allows" in row.reason
    # --futility off: the same null runs to the cap
    run, calls = _runner(effects, sd)
    off = run_until_decided(_config(tmp_path, perts, "off"),
                            SequentialPlan(cap=32, futility=False), run=run)
    assert off.stopped == "cap" and max(max(c.values()) for c in calls) == 32
    # the ladder's rule of earlier runs stops it where its projection leaves the cap
    run, calls = _runner(effects, sd)
    legacy = run_until_decided(_config(tmp_path, perts, "legacy"),
                               SequentialPlan(cap=32, rule=LEGACY_RULE), run=run)
    assert legacy.stopped == "beyond cap" and max(max(c.values()) for c in calls) < 32
    assert "would need" in legacy.decisions.iloc[0].reason
    run, _ = _runner(effects, sd)
    eq = run_until_decided(_config(tmp_path, perts, "margin"),
                           SequentialPlan(cap=32, margin=0.01), run=run)
    assert eq.decisions.iloc[0].decision == "equivalent"


def test_a_larger_cap_goes_on_and_a_budget_stops_between_rounds(tmp_path):
    perts = ("casper-delete", "seed-only")
    effects, sd = {"casper-delete": 0.01, "seed-only": 0.0}, {"casper-delete": 0.01,
                                                               "seed-only": 0.01}
    cfg = _config(tmp_path, perts)
    run, _ = _runner(effects, sd)
    first = run_until_decided(cfg, SequentialPlan(cap=6, rule=LEGACY_RULE), run=run)
    row = first.decisions.iloc[0]
    assert first.stopped == "beyond cap" and row.look == 3 and row.need > 6
    assert f"would need about {row.need} replicates (cap 6)" in row.reason
    more = run_until_decided(cfg, SequentialPlan(cap=64), run=run)  # keeps the ladder's rule
    assert more.stopped == "decided" and more.decisions.iloc[0].look > 6
    from recaudit.experiment import Store

    with Store(cfg.output, read_only=True) as st:
        assert {r["call"] for r in st.meta()["rounds"]} == {1, 2}
    # the default design's cap is its last look: a later call with a larger cap keeps it
    said: list = []
    run2, calls2 = _runner(effects, sd)
    cfg2 = _config(tmp_path, perts, "design")
    run_until_decided(cfg2, SequentialPlan(cap=6, futility=False), run=run2)
    again = run_until_decided(cfg2, SequentialPlan(cap=64), run=run2, progress=said.append)
    assert max(max(c.values()) for c in calls2) == 6 and again.stopped in ("cap", "decided")
    assert any("the cap stays 6" in line for line in said)
    # a budget too small for another round: the run stops and says so
    run3, _ = _runner(effects, sd)
    tight = run_until_decided(_config(tmp_path, perts, "budget"), SequentialPlan(cap=64),
                              run=run3, budget=0.0)
    assert tight.stopped == "budget" and len(tight.rounds) == 1


def test_decisions_without_trials_are_undecided(tmp_path):
    frame, found = decisions(tmp_path / "none.duckdb",
                             _config(tmp_path, ("random-delete", "seed-only")), SequentialPlan())
    assert list(frame.decision) == ["undecided"] and next(iter(found.values())).next == 3


def test_cli_until_decided_prints_the_decisions(tmp_path, capsys):
    out = tmp_path / "u.duckdb"
    code = main(["audit", "--dataset", "synthetic", "--sample-users", "100", "--model",
                 "gru4rec", "--param", "epochs=1", "--param", "embedding_dim=8", "--param",
                 "hidden_dim=8", "-p",
                 "random-delete", "-p", "seed-only", "--until-decided", "--max-seeds", "6",
                 "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    assert "random-delete vs seed-only" in text and "stopped:" in text
    with AuditStore(out, read_only=True) as st:
        assert st.trials().seed.nunique() >= 3
    # the store keeps the run's plan: its decisions read back as the run printed them
    from recaudit.audit import AuditConfig, decisions_of_rounds

    frame, plan, rounds = decisions_of_rounds(out, AuditConfig.from_dict)
    assert plan.cap == 6 and len(rounds) >= 1
    assert f"{frame.decision.iloc[0]}" in text
    # and the report shows them, with where the variation comes from
    pytest.importorskip("matplotlib")
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "Decided in rounds" in page and "Where the variation comes from" in page


def test_a_store_keeps_the_spending_rule_it_began_with(tmp_path):
    # a later call keeps the first call's rule, whatever its own plan says; rounds that name
    # no rule were run before rules were named (LEGACY_RULE), and go on with it
    from recaudit.audit._rounds import decisions_of_rounds
    from recaudit.experiment import Store
    from recaudit.stats import LEGACY_RULE

    other = "lan-demets-rho1"
    assert other != LEGACY_RULE
    perts = ("casper-delete", "seed-only")
    effects, sd = {"casper-delete": 0.01, "seed-only": 0.0}, {"casper-delete": 0.01,
                                                               "seed-only": 0.01}
    cfg = _config(tmp_path, perts)
    run, _ = _runner(effects, sd)
    run_until_decided(cfg, SequentialPlan(cap=6, rule=other), run=run)
    with Store(cfg.output) as st:
        kept = st.meta()["rounds"]
        assert {r["plan"]["rule"] for r in kept} == {other}
    run_until_decided(cfg, SequentialPlan(cap=8), run=run)
    with Store(cfg.output) as st:
        kept = st.meta()["rounds"]
        assert {r["plan"]["rule"] for r in kept} == {other}
        for r in kept:  # as an older version wrote them
            del r["plan"]["rule"]
        st.set_meta("rounds", kept)
        st.set_meta("config", {"read by": "the test's config_of"})
    more = run_until_decided(cfg, SequentialPlan(cap=64, rule=other), run=run)
    with Store(cfg.output, read_only=True) as st:
        rules = [r["plan"].get("rule") for r in st.meta()["rounds"]]
    assert rules[:len(kept)] == [None] * len(kept)
    assert set(rules[len(kept):]) == {LEGACY_RULE}
    # the decisions are read back with the rule the rounds were run by
    frame, plan, _ = decisions_of_rounds(cfg.output, lambda meta: cfg)
    assert plan.rule == LEGACY_RULE and plan.design == 6
    assert list(frame.decision) == list(more.decisions.decision)
    assert list(frame.level) == pytest.approx(list(more.decisions.level))


def test_results_summary_shows_the_models_and_the_rounds_later(tmp_path, capsys):
    # issue 60, item 8: which model is more stable, and what the rounds decided, read back
    # from the store by `recaudit results --summary` (before: the audit's output only)
    perts = ("random-delete",)
    effects = {("gru4rec", "random-delete"): 0.0, ("sasrec", "random-delete"): 0.05}
    run, _ = _runner(effects, {"random-delete": 0.01})
    cfg = _config(tmp_path, perts, models=("gru4rec", "sasrec"))
    out = run_until_decided(cfg, SequentialPlan(cap=8), run=run)
    assert main(["results", str(out.store), "--summary"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "Which model is more stable? RBO on synthetic" in text
    assert "sasrec is more stable than gru4rec under random-delete" in text
    assert "Decided in rounds (alpha 0.05 over 1 comparison(s)" in text
    assert re.search(r"gru4rec vs sasrec under .*random-delete .*less at 3 replicates", text)
    assert "From the store's last --until-decided call (1 round(s), cap 8" in text
    # and the comparison alone, for a program
    import io

    from recaudit.audit import compare_models

    assert main(["results", str(out.store), "--models", "--format", "csv"]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    expected = compare_models(out.store)
    assert list(printed.more_stable) == list(expected.more_stable) == ["sasrec"]
    np.testing.assert_allclose(printed.p_holm, expected.p_holm)


def test_a_difference_interval_stays_within_its_bounds(tmp_path):
    # issue 60, item 9: "+0.9184 [+0.7332, +1.1036]" — a difference of two RBOs in [0, 1]
    # lies in [-1, 1]; the rule's own interval reached past it, the frame's is clipped
    perts = ("random-delete", "seed-only")
    run, _ = _runner({"random-delete": 0.45, "seed-only": -0.45},
                     {"random-delete": 0.002, "seed-only": 0.15})
    frame, found = decisions(*_held(tmp_path, perts, run), SequentialPlan(cap=8))
    (s,) = found.values()
    assert s.high > 1                                   # what the rule computed
    row = frame.iloc[0]
    assert row.high == 1.0 and row.low == s.low and row.difference == s.difference


def _held(tmp_path, perts, run):
    cfg = _config(tmp_path, perts)
    run(cfg)
    return cfg.output, cfg
