"""The reproduction framework: verdicts, records, the report, and measures read from stores."""

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest

from recaudit.errors import ConfigError
from recaudit.reproduce import Claim, Experiment, Scope, Value, available, verdict
from recaudit.reproduce.rules import Less
from recaudit.reproduce import _recording as recording
from recaudit.reproduce._report import render_report, write_report


def _exp(runner=lambda w, s, n: {"a/average_overlap": 0.50, "b/average_overlap": 0.80}, **kw):
    return Experiment(
        name="fake-exp", paper="Nobody et al. 2099", title="A fake", artefacts="Table 9",
        data="none", scales={"small": "tiny", "paper": "big"}, runner=runner,
        values=(Value("a/average_overlap", "a", 0.52, "Table 9", tol=0.05),
                Value("b/average_overlap", "b", 0.70, "Table 9", tol=0.05, also=("b/rbo",))),
        claims=(Claim("a below b", "§1", Less("a/average_overlap", "b/average_overlap")),),
        **kw)


@pytest.mark.parametrize("measures,expected", [
    ({"a/average_overlap": 0.50, "b/average_overlap": 0.72}, "reproduced"),             # claim holds, values within tol
    ({"a/average_overlap": 0.50, "b/average_overlap": 0.80}, "direction reproduced"),   # claim holds, b off by 0.10
    ({"a/average_overlap": 0.90, "b/average_overlap": 0.72}, "contradicted"),           # claim reversed
    ({"a/average_overlap": 0.50}, "incomplete"),                  # measured, claim cannot be checked
    ({}, "not run"),
])
def test_verdicts(measures, expected):
    assert verdict(_exp(), measures) == expected


def test_run_writes_a_record_and_the_report_shows_it(tmp_path, monkeypatch):
    exp = _exp()
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run("fake-exp", "small", tmp_path)
    on_disk = json.loads((tmp_path / "fake-exp" / "small" / "record.json").read_text())
    assert on_disk["verdict"] == rec["verdict"] == "direction reproduced"
    assert on_disk["measures"] == {"a/average_overlap": 0.5, "b/average_overlap": 0.8}
    assert [v["match"] for v in on_disk["values"]] == [True, False]
    assert on_disk["claims"][0]["holds"] is True
    page = render_report(tmp_path)
    # the link is the anchor GitHub and the documentation site give the heading
    assert "### fake-exp: A fake" in page
    assert "| [fake-exp](#fake-exp-a-fake) | Nobody et al. 2099 | Table 9 | small | " \
           "exact values (no samples) | direction reproduced |" in page
    assert "- scale **small**: 1 record(s); on the papers' data: 1 direction reproduced" \
        in page
    assert "| a | Table 9 | 0.5200 | 0.5000 | – | yes |" in page
    assert "| b | Table 9 | 0.7000 | 0.8000 | – | no (±0.05) |" in page
    assert "- holds: a below b (§1)" in page
    assert "point values (no samples)" in page
    assert on_disk["invocations"][0]["command"] == on_disk["command"]
    again = recording.run("fake-exp", "small", tmp_path)  # a resumed run adds its invocation
    assert len(again["invocations"]) == 2
    assert again["wall_seconds"] == pytest.approx(
        sum(i["wall_seconds"] for i in again["invocations"]), abs=0.11)
    with pytest.raises(ConfigError, match="no scale"):
        recording.run("fake-exp", "huge", tmp_path)
    with pytest.raises(ConfigError, match="fake-exp"):
        recording.get("fake-ex")


def test_the_report_compares_recorded_measures_with_the_current_values(tmp_path, monkeypatch):
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {"fake-exp": _exp()})
    recording.run("fake-exp", "small", tmp_path)  # b: ours 0.80, paper 0.70 -> no
    fixed = _exp(runner=lambda w, s, n: pytest.fail("the report must not re-run"))
    fixed = dataclasses.replace(fixed, values=(
        fixed.values[0], Value("b/average_overlap", "b", 0.78, "Table 9 (the right panel)", tol=0.05)))
    monkeypatch.setattr(recording, "_EXTRA", {"fake-exp": fixed})
    page = render_report(tmp_path)
    assert "| b | Table 9 (the right panel) | 0.7800 | 0.8000 | yes |" in page
    assert "| small | exact values (no samples) | reproduced |" in page
    path = tmp_path / "fake-exp" / "small" / "record.json"
    before = json.loads(path.read_text())
    assert before["verdict"] == "direction reproduced"  # rendering leaves the record alone
    # writing the page brings the stale record up to date: what the page says, the record says
    written = write_report(tmp_path, tmp_path / "page.md")
    assert written == [tmp_path / "page.md", path]
    after = json.loads(path.read_text())
    assert after["verdict"] == "reproduced"
    assert [v["match"] for v in after["values"]] == [True, True]
    assert after["values"][1]["source"] == "Table 9 (the right panel)"
    untouched = ("measures", "invocations", "scope", "wall_seconds", "command")
    assert {k: after[k] for k in untouched} == {k: before[k] for k in untouched}
    assert write_report(tmp_path, tmp_path / "page.md") == [tmp_path / "page.md"]  # no churn


def test_unavailable_experiments_refuse_to_run(tmp_path, monkeypatch):
    exp = _exp(unavailable="needs LastFM")
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    with pytest.raises(ConfigError, match="needs LastFM"):
        recording.run("fake-exp", "small", tmp_path)
    assert "**Not run**: needs LastFM" in render_report(tmp_path)


def test_registered_experiments_are_well_formed():
    exps = available()
    names = [e.name for e in exps]
    assert len(names) == len(set(names))
    assert names[0].startswith("oh2022") and any(n.startswith("betello2023") for n in names)
    for e in exps:
        assert set(e.scales) >= {"small"}
        assert e.paper.split()[-1].isdigit()             # cited by author and year
        keys = [v.key for v in e.values]
        assert len(keys) == len(set(keys)), e.name
        for c in e.claims:
            assert c.keys, (e.name, c.text)


def test_oh2022_configs_follow_the_paper_setup(tmp_path):
    from recaudit.reproduce import _oh2022

    work = tmp_path / "oh2022-table3" / "paper"
    cfgs = _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS, _oh2022.LOO)
    by_models = {tuple(m.name for m in c.models): c for c in cfgs}
    assert set(by_models) == {("lstm@oh2022", "tisasrec@oh2022"), ("latentcross@oh2022",),
                              ("jodie@oh2022",)}
    window = by_models[("lstm@oh2022", "tisasrec@oh2022")]
    assert {"name": "casper-delete", "max_len": 50} in window.perturbations  # latest 50
    assert "casper-delete" in by_models[("latentcross@oh2022",)].perturbations  # all
    # JODIE's TracIn checkpoints (every 10 epochs) on its TracIn perturbations, not its spec,
    # whose trial ids predate them; the other models' specs carry theirs
    jodie = by_models[("jodie@oh2022",)]
    assert {"name": "tracin-delete", "checkpoint_every": 10} in jodie.perturbations
    assert "checkpoint_every" not in jodie.models[0].params
    assert all(m.params["checkpoint_every"] == 10 for m in window.models)
    # at small scale JODIE trains 3 epochs: checkpoints every epoch, not every 5 (none)
    small = _oh2022._configs(work, "small", "foursquare", ("jodie",), _oh2022.LOO)
    assert {"name": "tracin-delete", "checkpoint_every": 1} in small[0].perturbations
    assert small[0].models[0].params["epochs"] == 3
    c = by_models[("latentcross@oh2022",)]
    assert (c.split.floor, c.split.ratio, c.datasets[0].min_user_interactions) == \
        ("test", 0.9, 10)
    assert c.metrics.depth is None and c.metrics.k == 10          # full lists, Jaccard@10
    assert len({cfg.output for cfg in cfgs}) == 1                  # one shared store
    assert c.output.endswith("oh2022-foursquare-paper.duckdb")


@pytest.mark.parametrize("scale,counts", [("small", (1, 5, 10)), ("paper", tuple(range(1, 11)))])
@pytest.mark.parametrize("name,scope", [("betello2023-removal", ""),
                                        ("betello2023-removal-inputs", "+inputs")])
def test_betello2023_removal_audits_every_count_its_claims_read(tmp_path, monkeypatch, scale,
                                                                counts, name, scope):
    from recaudit.perturb import parse
    from recaudit.reproduce import _betello2023 as b

    seen = []

    def audit(cfg, workers, train=True):
        seen.extend(cfg.perturbations)
        raise RuntimeError("stop")

    monkeypatch.setattr(b, "audit_trials", audit)
    exp = next(e for e in available() if e.name == name)
    with pytest.raises(RuntimeError, match="stop"):
        exp.runner(tmp_path, scale, 1, Scope())
    refs = set() if scope else {"seed-only"}  # the training-only run shares Table 2's
    assert set(seen) == refs | {f"remove-{w}-{n}{scope}" for w in b.WHERE for n in counts}
    assert all(parse(p).needs.inputs == bool(scope) for p in set(seen) - refs)
    read = {k.split("/")[1] for c in exp.claims for k in c.keys}
    read |= {v.key.split("/")[1] for v in exp.values}
    assert read <= set(seen)  # no claim or value can stay unchecked at either scale


@pytest.mark.parametrize("name", ["betello2023-table2", "betello2023-removal",
                                  "betello2023-removal-inputs"])
def test_betello2023_runs_take_part_of_the_grid(tmp_path, monkeypatch, name):
    """--models gru4rec (SASRec's fits at the paper's settings take hours on a CPU),
    --perturbations and --no-train reach the audit; a scope that keeps no perturbation of
    the experiment runs nothing."""
    from recaudit.reproduce import _betello2023 as b

    calls = []

    def audit(cfg, workers, train=True):
        calls.append(([m.name for m in cfg.models], cfg.perturbations, cfg.seeds, train))
        return pd.DataFrame()

    monkeypatch.setattr(b, "audit_trials", audit)
    exp = next(e for e in available() if e.name == name)
    first = "seed-only" if name != "betello2023-removal-inputs" else "remove-end-1+inputs"
    scope = Scope(models=("gru4rec",), perturbations=(first, "remove-end-1"), train=False)
    assert exp.call(tmp_path, "paper", 1, scope) == {}
    (models, perts, seeds, train), = calls
    assert models == ["gru4rec@betello2023"] and seeds == (0,) and train is False
    assert [p.name if hasattr(p, "name") else p for p in perts] == \
        [p for p in (first, "remove-end-1") if p in exp_perturbations(name)]
    assert exp.call(tmp_path, "paper", 1, Scope(perturbations=("random-delete",))) == {}
    assert len(calls) == 1  # nothing of the experiment kept: no audit
    with pytest.raises(ConfigError, match="unknown model"):
        exp.call(tmp_path, "paper", 1, Scope(models=("jodie",)))


def exp_perturbations(name):
    """The perturbations each Betello et al. 2023 experiment runs at paper scale."""
    counts = range(1, 11)
    removal = [f"remove-{w}-{n}" for w in ("beginning", "middle", "end") for n in counts]
    return {"betello2023-table2": ["seed-only"],
            "betello2023-removal": ["seed-only"] + removal,
            "betello2023-removal-inputs": [f"{r}+inputs" for r in removal]}[name]


def test_rls_measures_are_seed_means_of_the_store(tmp_path):
    from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, trial_summary
    from recaudit.reproduce._audit import audit_trials, rls_measures

    cfg = AuditConfig(datasets=(DatasetSpec("synthetic", options={"n_users": 40,
                                                                  "n_items": 30}),),
                      models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                    "hidden_dim": 8}),),
                      perturbations=("none", "random-delete"), seeds=(0, 1),
                      output=str(tmp_path / "s.duckdb"))
    summary = audit_trials(cfg)
    assert len(summary) == 4
    m = rls_measures(summary)
    full = trial_summary(cfg.output)
    rd = full[full.perturbation == "random-delete"]
    assert m["gru4rec/random-delete/average_overlap"] == pytest.approx(rd["average_overlap"].mean())
    assert m["gru4rec/random-delete/hit_base"] == pytest.approx(rd["hit_base"].mean())
    assert m["gru4rec/none/average_overlap"] == 1.0 and m["gru4rec/none/n_seeds"] == 2
    assert np.isfinite(m["gru4rec/random-delete/mrr_pert"])
    # what the trials cost, summed (not averaged) over seeds, from the store's own timings
    assert m["gru4rec/random-delete/trial_seconds"] == pytest.approx(rd["total_seconds"].sum())
    assert m["gru4rec/random-delete/trial_seconds"] > 0
    # a trial stored with a total below its fit's (a resumed fit, before its total added the
    # fit's earlier seconds) counts its fit's
    old = summary.assign(fit_seconds=summary["total_seconds"] + 10.0)
    assert rls_measures(old)["gru4rec/random-delete/trial_seconds"] == pytest.approx(
        m["gru4rec/random-delete/trial_seconds"] + 2 * 10.0)


def test_the_report_says_what_the_trials_took_beside_the_wall_time():
    from recaudit.reproduce._report import _scale

    rec = {"scale": "paper", "command": "recaudit reproduce run x --no-train",
           "scale_note": "n", "machine": {"cpus": 2, "machine": "x86_64"}, "wall_seconds": 3.0,
           "started": "2026-11-26 00:00", "versions": {}, "verdict": "not run", "claims": [],
           "repetitions": "1 seed, 9 queries",
           "values": [], "measures": {"a/p/trial_seconds": 5400.0, "a/q/trial_seconds": 1800.0,
                                      "a/p/rbo": 0.5}}
    machine = next(line for line in _scale(rec, False) if line.startswith("- Machine"))
    assert "wall time 3 s" in machine and "its trials took 2 h 00 min to train" in machine
    rec["measures"] = {"a/p/rbo": 0.5}                   # records made before: no claim
    machine = next(line for line in _scale(rec, False) if line.startswith("- Machine"))
    assert "trials took" not in machine


@pytest.mark.parametrize(("x", "shown"), [(None, "–"), (0.0, "0.0000"), (0.77994, "0.7799"),
                                          (-0.23, "-0.2300"), (44.44, "44.4"),
                                          (6.4e-05, "6.4e-05"), (-1.2345e-06, "-1.23e-06")])
def test_report_numbers_keep_tiny_values_visible(x, shown):
    from recaudit.reproduce._report import _num

    assert _num(x) == shown


@pytest.mark.parametrize("scale,measures,expected", [
    ("small", {"a/average_overlap": 0.90, "b/average_overlap": 0.72}, "differs on other data"),
    ("small", {"a/average_overlap": 0.50, "b/average_overlap": 0.72}, "holds on other data"),
    ("small", {"a/average_overlap": 0.50, "b/average_overlap": 0.95}, "holds on other data"),
    ("paper", {"a/average_overlap": 0.90, "b/average_overlap": 0.72}, "contradicted"),
    ("paper", {"a/average_overlap": 0.50, "b/average_overlap": 0.72}, "reproduced"),
    (None, {"a/average_overlap": 0.90, "b/average_overlap": 0.72}, "contradicted"),
])
def test_claims_on_data_that_stands_in_hold_or_differ(scale, measures, expected):
    """At the small scale the claims are tested on other data than the paper's: a reversed
    finding differs there, it does not contradict the paper, and values do not decide."""
    from recaudit.reproduce import evaluate_claims

    exp = _exp(substitute={"small": "tiny-data for the-paper's-data"})
    assert verdict(exp, measures, scale=scale) == expected
    (claim,) = evaluate_claims(exp, measures, scale)
    assert claim["state"] == {"differs on other data": "differs", "contradicted":
                              "contradicted"}.get(expected, "holds")
    assert claim.get("other_data") == ("tiny-data for the-paper's-data"
                                       if scale == "small" else None)


def test_a_claim_stated_on_other_data_differs_without_contradicting():
    from recaudit.reproduce import evaluate_claims

    mine = Claim("a below b", "§1", Less("a/average_overlap", "b/average_overlap"))
    theirs = Claim("b below a (ML-1M)", "§2", Less("b/average_overlap", "a/average_overlap"),
                   substitute="ML-100k for ML-1M")
    exp = dataclasses.replace(_exp(), claims=(mine, theirs))
    m = {"a/average_overlap": 0.50, "b/average_overlap": 0.72}
    assert [c["state"] for c in evaluate_claims(exp, m, "paper")] == ["holds", "differs"]
    assert verdict(exp, m, scale="paper") == "differs on other data"
    reversed_ = {"a/average_overlap": 0.90, "b/average_overlap": 0.72}
    assert [c["state"] for c in evaluate_claims(exp, reversed_)] == ["contradicted", "holds"]
    assert verdict(exp, reversed_) == "contradicted"       # the paper's own data decides
    both = dataclasses.replace(exp, claims=(theirs,))
    assert verdict(both, reversed_) == "holds on other data"


def test_the_page_counts_other_data_apart_and_names_the_download(tmp_path, monkeypatch):
    exp = _exp(substitute={"small": "tiny-data for ML-20M"}, downloads={"paper": ("ml-20m",)})
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    monkeypatch.setenv("RECAUDIT_MIRROR", str(tmp_path / "mirror"))
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path / "cache"))
    recording.run("fake-exp", "small", tmp_path)
    with pytest.raises(ConfigError, match="ml-20m, which is not on this machine") as err:
        recording.run("fake-exp", "paper", tmp_path)
    assert "recaudit datasets fetch ml-20m" in err.value.hint
    assert not (tmp_path / "fake-exp" / "paper").exists()
    page = render_report(tmp_path)
    assert "| small | exact values (no samples) | holds on other data |" in page
    assert "- scale **small**: 1 record(s); counted apart, on data that stands in for the " \
           "paper's: 1 holds on other data" in page
    assert "- Not recorded at scale paper: it reads the paper's data (`ml-20m`, MovieLens " \
           "20M" in page
    assert "registered with its SHA-256" in page
    assert "could not download. With network access, `recaudit datasets fetch ml-20m` " \
           "downloads and checks it, then `recaudit reproduce run fake-exp --scale paper` " \
           "records it" in page
    assert "- Verdict: **holds on other data** — every claim tested on tiny-data for ML-20M" \
        in page
    assert "- holds on other data: a below b (§1)" in page


def test_repetitions_are_read_from_the_samples():
    import pandas as pd

    from recaudit.reproduce._overview import repetitions

    def frame(seeds, draws, units):
        return pd.DataFrame([{"replicate": f"{s}:{d}", "unit": str(u), "value": 0.5}
                             for s in range(seeds) for d in range(draws)
                             for u in range(units)])

    exp = _exp(paper_repetitions="3 seeds × 10 draws")
    drawn = {"x": frame(2, 3, 40), "y": frame(2, 1, 40)}
    assert repetitions(exp, None, drawn) == ("2 seeds × 3 draws (1 for a perturbation that "
                                             "draws nothing), 40 queries (the paper: 3 seeds "
                                             "× 10 draws)")
    assert repetitions(exp, {"seeds": 1, "draws": None}, {"x": frame(1, 1, 7)}) == \
        "1 seed, 7 queries (run with --seeds 1; the paper: 3 seeds × 10 draws)"
    # a run until decided says its rounds and cap, not the scope its last round reached
    rounds = {"cap": 192, "grows": "seeds", "rounds": [{"seeds": 3}, {"seeds": 6}]}
    assert repetitions(exp, {"seeds": 6, "draws": None}, {"x": frame(6, 1, 7)}, rounds) == \
        ("6 seeds, 7 queries (run until decided in 2 rounds, at most 192 seeds; the paper: "
         "3 seeds × 10 draws)")
    per_seed = {"ctr": pd.DataFrame({"replicate": list("01234"), "unit": ["all"] * 5,
                                     "value": 0.1})}
    sets = {"k": pd.DataFrame({"replicate": ["0"] * 5, "unit": [f"AMR:{i}" for i in range(5)],
                               "value": 0.0}),
            "z": pd.DataFrame({"replicate": ["0"] * 2, "unit": ["ZERO:0", "ZERO:1"],
                               "value": 0.0})}
    plain = _exp(unit="sets per cell")
    assert repetitions(plain, None, per_seed) == "5 seeds"
    assert repetitions(plain, None, sets) == "1 seed, 2-5 sets per cell"
    assert repetitions(plain, None, {}) == "exact values (no samples)"
