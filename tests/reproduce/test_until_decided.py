"""Claims read sequentially (reproduce._sequential) and ``reproduce run --until-decided``:
each kind of leaf against its closed form, the rounds of a run on a stand-in experiment
whose samples follow known effects, the record and the page."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pandas as pd
import pytest
from scipy import stats as ss

from recaudit.reproduce import Claim, Experiment, Measures
from recaudit.reproduce import _recording as recording
from recaudit.reproduce._report import render_report
from recaudit.reproduce._sequential import decide_sequential, leaf_estimator
from recaudit.reproduce.rules import Bound, Contrast, Greater, Less, Within
from recaudit.stats import SequentialPlan


def _sets(key: str, values) -> pd.DataFrame:
    h = key.split("/")[1]
    return pd.DataFrame({"replicate": "0", "unit": [f"{h}:{i}" for i in range(len(values))],
                         "value": np.asarray(values, float)})


def _seeds(values) -> pd.DataFrame:
    return pd.DataFrame({"replicate": [str(s) for s in range(len(values))], "unit": "all",
                         "value": np.asarray(values, float)})


def _measures(frames: dict[str, pd.DataFrame]) -> Measures:
    return Measures({k: float(f.value.mean()) for k, f in frames.items()}, frames)


def test_independent_sets_are_read_by_welch_on_the_first_sets():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.3, 0.05, 20), rng.normal(0.1, 0.05, 20)
    m = _measures({"m/AMR/topout": _sets("m/AMR/topout", a),
                   "m/ARAND/topout": _sets("m/ARAND/topout", b)})
    leaf = Greater("m/AMR/topout", "m/ARAND/topout")
    at, n = leaf_estimator(leaf, m.samples, m)
    assert n == 20
    est = at(12)
    t = ss.ttest_ind(a[:12], b[:12], equal_var=False)
    assert est.mean == pytest.approx(a[:12].mean() - b[:12].mean())
    assert est.mean / est.se == pytest.approx(t.statistic)
    (truth,), found = decide_sequential([leaf], m.samples, m, SequentialPlan(cap=32))
    f = next(iter(found.values()))
    assert truth is True and f.look == 16 and f.test == "sequential"


def test_directions_bounds_contrasts_and_tolerances():
    rng = np.random.default_rng(2)
    frames = {f"x/mix{k}/ctr": _seeds(0.2 + 0.01 * k + rng.normal(0, 0.001, 8))
              for k in range(3)}
    frames["x/mix0/auc"] = _seeds(0.6 + rng.normal(0, 0.001, 8))
    m = _measures(frames)
    rising = Contrast((("x/mix0/ctr", -1.0), ("x/mix2/ctr", 1.0)), "rises")
    falling = Contrast((("x/mix0/ctr", 1.0), ("x/mix2/ctr", -1.0)), "falls")
    below, above = Bound("x/mix0/auc", 0.7), Bound("x/mix0/auc", 0.7, below=False)
    less = Less("x/mix2/ctr", "x/mix0/ctr")          # false: mix 2 is higher
    inside = Within("x/mix1/ctr", "x/mix0/ctr", 0.2)  # 0.21 vs 0.20: inside 20 %
    outside = Within("x/mix2/ctr", "x/mix0/ctr", 0.01)
    rules = [rising, falling, below, above, less, inside, outside]
    truths, found = decide_sequential(rules, m.samples, m, SequentialPlan(cap=8))
    assert truths == [True, False, True, False, False, True, False]
    # seven tested leaves share alpha (five by Holm, each tolerance a family of its own):
    # the repeated p-values of the decided ones pass Holm's strictest threshold
    assert max(found[id(r)].p for r in (rising, falling, below, above, less)) <= 0.05 / 7


def test_a_null_with_a_margin_is_equivalent_not_contradicted():
    rng = np.random.default_rng(3)
    frames = {"m/A/topout": _sets("m/A/topout", rng.normal(0.2, 0.01, 24)),
              "m/B/topout": _sets("m/B/topout", rng.normal(0.2, 0.01, 24))}
    m = _measures(frames)
    exp = Experiment(name="eq", paper="P", title="t", artefacts="a", data="d",
                     scales={"small": "s"}, runner=lambda *a: m,
                     claims=(Claim("A beats B", "§1", Greater("m/A/topout", "m/B/topout")),))
    from recaudit.reproduce import evaluate_claims, verdict

    (claim,) = evaluate_claims(exp, m, "small", SequentialPlan(cap=24, margin=0.05))
    assert claim["state"] == "equivalent" and claim["tests"][0]["equivalent"]
    assert verdict(exp, m, [claim], "small") == "undecided"
    (plain,) = evaluate_claims(exp, m, "small", SequentialPlan(cap=24))
    assert plain["state"] == "undecided"


def _stand_in(effects: dict[str, float], calls: list):
    """An experiment whose modification sets follow ``effects`` (TopOut per set), grown by
    draws; set i of a cell is the same whatever the run (a pure function of its identity)."""
    def runner(workdir, scale, workers, scope):
        n = scope.sets(10)
        models = scope.models or ("m1", "m2")
        calls.append((n, tuple(models)))
        frames = {}
        for model in models:
            for h, eff in effects.items():
                key = f"{model}/{h}/topout"
                vals = [np.random.default_rng([zlib.crc32(key.encode()), i]).normal(eff, 0.02)
                        for i in range(n)]
                frames[key] = _sets(key, vals)
        return _measures(frames)

    return Experiment(
        name="stand-in", paper="Nobody 2099", title="Sets until decided", artefacts="T1",
        data="none", scales={"small": "10 sets"}, runner=runner, repeatable=True,
        grows="draws", models=("m1", "m2"), unit="sets per cell",
        claims=(Claim("m1: AMR beats ARAND", "§1", Greater("m1/AMR/topout", "m1/ARAND/topout")),
                Claim("m2: ALI beats ARAND", "§2", Greater("m2/ALI/topout", "m2/ARAND/topout"))))


def test_run_until_decided_grows_only_what_is_undecided(tmp_path, monkeypatch):
    calls: list = []
    # m1's AMR beats ARAND by far (decided at an early look); m2's ALI by a little
    exp = _stand_in({"AMR": 0.5, "ALI": 0.14, "ARAND": 0.1}, calls)
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run("stand-in", "small", tmp_path, until=SequentialPlan(cap=64))
    seq = rec["sequential"]
    assert seq["stopped"] == "decided" and len(seq["rounds"]) > 1
    assert seq["rule"] == "group-sequential-t" and seq["futility"] is True
    assert calls[0] == (3, ("m1", "m2"))
    assert [c["state"] for c in rec["claims"]] == ["holds", "holds"]
    consumed = {c["text"]: c["replicates"] for c in seq["claims"]}
    m1 = consumed["m1: AMR beats ARAND"]
    assert m1 <= 8 and m1 < consumed["m2: ALI beats ARAND"]
    assert all(models == ("m2",) for n, models in calls if n > m1)   # only m2 grew after
    assert "--until-decided --max-draws 64" in rec["command"]
    # the record re-reads the same way (the page evaluates it with the recorded plan)
    on_disk = json.loads((tmp_path / "stand-in" / "small" / "record.json").read_text())
    assert on_disk["sequential"]["cap"] == 64
    page = render_report(tmp_path)
    assert "Until decided (sequential rule group-sequential-t: " in page
    assert "alpha 0.05, cap 64 draws, futility on)" in page
    assert "read sequentially" in page
    assert f"at {consumed['m2: ALI beats ARAND']} replicates" in page
    # a record whose stored states went stale is judged anew, its sequential entry included
    path = tmp_path / "stand-in" / "small" / "record.json"
    stale = {**on_disk, "verdict": "undecided", "sequential": {**on_disk["sequential"], "claims": [
        {**c, "state": "undecided"} for c in on_disk["sequential"]["claims"]]}}
    path.write_text(json.dumps(stale))
    now, _, was_stale = recording.judge(tmp_path, exp, "small")
    assert was_stale and now["verdict"] == on_disk["verdict"]
    assert now["sequential"]["claims"] == on_disk["sequential"]["claims"]
    assert "(undecided)" not in render_report(tmp_path)


def test_run_until_decided_stops_beyond_the_cap(tmp_path, monkeypatch):
    calls: list = []
    exp = _stand_in({"AMR": 0.1, "ALI": 0.1, "ARAND": 0.1}, calls)   # no effect anywhere
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run("stand-in", "small", tmp_path, until=SequentialPlan(cap=16))
    assert rec["sequential"]["stopped"] in ("futility", "cap")
    assert max(n for n, _ in calls) <= 16
    legacy = recording.run("stand-in", "small", tmp_path / "legacy",
                           until=SequentialPlan(cap=16, rule="bonferroni-sqrt"))
    assert legacy["sequential"]["stopped"] in ("beyond cap", "cap")
    eq = recording.run("stand-in", "small", tmp_path / "eq",
                       until=SequentialPlan(cap=64, margin=0.05))
    assert [c["state"] for c in eq["claims"]] == ["equivalent", "equivalent"]
    assert eq["sequential"]["stopped"] == "decided"


def test_cli_refuses_until_decided_where_nothing_repeats(tmp_path, capsys):
    from recaudit.cli import main

    code = main(["reproduce", "run", "shriver2018-table3.4", "--until-decided", "--dir",
                 str(tmp_path)])
    assert code != 0 and "cannot run until decided" in capsys.readouterr().err
    code = main(["reproduce", "run", "zhu2023-figure8", "--max-seeds", "40", "--dir",
                 str(tmp_path)])
    assert code != 0 and "go with --until-decided" in capsys.readouterr().err


def test_a_record_keeps_the_spending_rule_it_was_decided_by(tmp_path, monkeypatch):
    from recaudit.stats import LEGACY_RULE

    other = "lan-demets-rho1"
    # a record written before rules were named was decided by the Bonferroni rule
    old = {"sequential": {"alpha": 0.05, "cap": 256, "design": 256, "margin": 0.0}}
    assert recording.sequential_plan(old).rule == LEGACY_RULE
    assert recording.sequential_plan({"sequential": {**old["sequential"], "rule": other}}
                                     ).rule == other
    # a new run names its rule; continued with another plan, it keeps rule and design
    calls: list = []
    exp = _stand_in({"AMR": 0.5, "ALI": 0.14, "ARAND": 0.1}, calls)
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run("stand-in", "small", tmp_path, until=SequentialPlan(cap=8, rule=other))
    assert rec["sequential"]["rule"] == other
    again = recording.run("stand-in", "small", tmp_path, until=SequentialPlan(cap=16))
    assert again["sequential"]["rule"] == other and again["sequential"]["design"] == 8
    # a record without a rule (as older versions wrote) goes on with LEGACY_RULE
    path = tmp_path / "stand-in" / "small" / "record.json"
    on_disk = json.loads(path.read_text())
    del on_disk["sequential"]["rule"]
    path.write_text(json.dumps(on_disk))
    third = recording.run("stand-in", "small", tmp_path,
                          until=SequentialPlan(cap=64, rule=other))
    assert third["sequential"]["rule"] == LEGACY_RULE
    assert third["sequential"]["design"] == 8
