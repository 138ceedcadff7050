"""Zhu et al. 2023 experiments: measures from rows, derived measures, claims on constructed
measures, and a reduced end-to-end run that resumes from its per-seed files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from recaudit.reproduce import VERDICTS, get, verdict

from recaudit.reproduce._zhu2023 import _slates as z  # noqa: E402
from recaudit.reproduce._zhu2023 import _sequential as zs  # noqa: E402

NAMES = ("zhu2023-figure7", "zhu2023-figure8", "zhu2023-table3")


def _row(algo, mix, seed, metric, value, rnd=None):
    return {"scenario": "s", "algorithm": algo, "mix": mix, "seed": seed, "round": rnd,
            "metric": metric, "value": value}


def test_measures_are_seed_means_with_sd_under_the_documented_keys():
    rows = [_row("DeepFM", 0.5, 0, "ctr", 0.2), _row("DeepFM", 0.5, 1, "ctr", 0.4),
            _row("Planner Oracle", None, 0, "ps", 0.1), _row("Planner Oracle", None, 1, "ps", 0.3),
            _row("GRU", 0.5, 0, "ctr", 0.5, rnd=3), _row("GRU", 0.5, 1, "ctr", 0.7, rnd=3)]
    m = z.measures(rows)
    assert m["deepfm/mix0.5/ctr"] == pytest.approx(0.3)
    assert m["deepfm/mix0.5/ctr/sd"] == pytest.approx(np.std([0.2, 0.4], ddof=1))
    assert m["planner/ps"] == pytest.approx(0.2)
    assert m["gru/mix0.5/round03/ctr"] == pytest.approx(0.6)
    assert set(m) == {"deepfm/mix0.5/ctr", "deepfm/mix0.5/ctr/sd", "planner/ps", "planner/ps/sd",
                      "gru/mix0.5/round03/ctr", "gru/mix0.5/round03/ctr/sd"}


def test_slope_rule_is_the_least_squares_slope():
    from recaudit.reproduce._zhu2023._common import slope_rule
    from recaudit.reproduce.rules import decide

    x = {f"a/mix{m:g}/ctr": 0.1 + 0.3 * m for m in z.MIXES}
    rising, falling = slope_rule("a", "ctr", z.MIXES, True), slope_rule("a", "ctr", z.MIXES, False)
    truths, found = decide([rising, falling], {}, x, 0.05)
    assert truths == [True, False]
    sxx = sum((m - np.mean(z.MIXES)) ** 2 for m in z.MIXES)
    # the contrast is the slope times sum (x - mean x)^2: same sign, no intercept
    assert found[id(rising.leaves()[0])].difference == pytest.approx(0.3 * sxx)
    assert np.polyfit(z.MIXES, list(x.values()), 1)[0] == pytest.approx(0.3)


def _seq_rows(ctr_curves: dict[str, list[float]], totals: dict[str, dict[str, list[float]]]):
    rows = []
    for algo, curve in ctr_curves.items():
        mix = None if "Oracle" in algo else 0.5
        rows += [_row(algo, mix, 0, "ctr", v, rnd=r + 1) for r, v in enumerate(curve)]
    for algo, mets in totals.items():
        mix = None if "Oracle" in algo else 0.5
        for metric, per_seed in mets.items():
            rows += [_row(algo, mix, s, metric, v) for s, v in enumerate(per_seed)]
    return rows


def test_derived_crossing_round_ps_ratio_and_seed_shares():
    unb = [0.5] * 20
    pla = [0.4] * 9 + [0.6] * 11            # below for rounds 1-9, above from round 10 on
    pla[3] = 0.55                             # an early excursion above does not count
    rows = _seq_rows({"Unbiased Oracle": unb, "Planner Oracle": pla},
                     {"Unbiased Oracle": {"ps": [0.01]}, "Planner Oracle": {"ps": [0.05]},
                      "DNN": {"ctr": [0.3, 0.3, 0.3], "fctr": [0.5, 0.5, 0.5],
                              "ps": [0.1, 0.1, 0.1], "auc": [0.6, 0.6, 0.6]},
                      "GRU": {"ctr": [0.4, 0.2, 0.2], "fctr": [0.4, 0.4, 0.6],
                              "ps": [0.1, 0.2, 0.2], "auc": [0.7, 0.7, 0.7]}})
    m = z.measures(rows)
    d = zs.derived(rows, m)
    assert d["crossing_round"] == 10.0
    assert d["ps_ratio"] == pytest.approx(5.0)
    assert d["seeds_gru_closer/ctr"] == pytest.approx(1 / 3)
    assert d["seeds_gru_closer/fctr"] == pytest.approx(2 / 3)
    assert d["seeds_gru_closer/ps"] == pytest.approx(2 / 3)   # a tie is not closer
    assert d["seeds_gru_closer/auc"] == 1.0
    never = _seq_rows({"Unbiased Oracle": unb, "Planner Oracle": [0.4] * 20},
                      {"Unbiased Oracle": {"ps": [0.0]}, "Planner Oracle": {"ps": [0.1]},
                       "DNN": {m_: [0.1] for m_ in zs.CLOSER},
                       "GRU": {m_: [0.1] for m_ in zs.CLOSER}})
    d = zs.derived(never, z.measures(never))
    assert d["crossing_round"] == 21.0 and "ps_ratio" not in d   # no division by zero


def _table3_measures(**override):
    """Measures shaped like Table 3 (the paper's own numbers) and Figure 10's description."""
    m = {}
    for k, vals in zs.TABLE3.items():
        for metric, v in zip(("auc", "ctr", "fctr", "ps"), vals):
            if v is not None:
                m[f"{k}/{metric}"] = v
    for r in range(1, 21):
        m[f"unbiased/round{r:02d}/ctr"] = 0.5 - 0.02 * r
        m[f"planner/round{r:02d}/ctr"] = 0.45 - 0.01 * r    # crosses at round 6
        m[f"gru/mix0.5/round{r:02d}/ctr"] = 0.46 - 0.011 * r
        m[f"dnn/mix0.5/round{r:02d}/ctr"] = 0.49 - 0.019 * r
    m["ps_ratio"] = m["planner/ps"] / m["unbiased/ps"]
    m["crossing_round"] = 10.0
    for algo in ("gru", "dnn"):
        m[f"gap/{algo}"] = float(np.mean([abs(m[f"{algo}/mix0.5/round{r:02d}/ctr"]
                                              - m[f"planner/round{r:02d}/ctr"])
                                          for r in range(1, 21)]))
    m.update(override)
    return m


def test_table3_claims_hold_on_the_papers_numbers_and_fail_when_reversed():
    exp = get("zhu2023-table3")
    m = _table3_measures()
    assert all(c.check(m) for c in exp.claims)
    assert verdict(exp, m) == "reproduced"      # every printed value matches itself
    assert verdict(exp, dict(m, **{"planner/fctr": 0.20})) == "direction reproduced"
    reversed_ctr = _table3_measures(**{"gru/mix0.5/ctr": 0.36})
    fails = [c.text for c in exp.claims if c.check(reversed_ctr) is False]
    assert fails == ["GRU higher CTR than DNN (closer to the Planner)."]
    small_shift = _table3_measures(**{"planner/ps": 3.0 * zs.TABLE3["unbiased"][3]})
    assert [c.source for c in exp.claims if c.check(small_shift) is False] == ["§5.3.3; Table 3"]
    assert verdict(exp, reversed_ctr) == "contradicted"
    table = {v.key: v.paper for v in exp.values if v.source == "Table 3" and v.paper is not None}
    assert table["gru/mix0.5/fctr"] == 0.3195 and table["unbiased/ps"] == 0.0024
    assert table["ps_ratio"] == pytest.approx(8.4583, abs=1e-4)


def _slate_measures(algos, oracles):
    m = {}
    for i, a in enumerate(algos):                     # later algorithms: steeper trends
        for mix in z.MIXES:
            m[f"{a}/mix{mix:g}/ctr"] = 0.25 + 0.01 * (i + 1) * mix
            m[f"{a}/mix{mix:g}/fctr"] = 0.45 - 0.05 * (i + 1) * mix
            m[f"{a}/mix{mix:g}/auc"] = 0.6 + 0.01 * i
    m.update({f"{oracles[0]}/ctr": 0.26, f"{oracles[0]}/fctr": 0.25, "unbiased/ctr": 0.25,
              "unbiased/fctr": 0.44})
    return m


@pytest.mark.parametrize("name,algos,manip", [
    ("zhu2023-figure7", ("deepfm", "setrank"), "decoy"),
    ("zhu2023-figure8", ("deepfm", "lambdafm", "setrank"), "greedy")])
def test_slate_claims_on_constructed_trends(name, algos, manip):
    exp = get(name)
    m = _slate_measures(algos, (manip,))
    assert all(c.check(m) for c in exp.claims)
    flat = dict(m)
    for mix in z.MIXES:                               # DeepFM no longer learns the decoys
        flat[f"deepfm/mix{mix:g}/fctr"] = 0.45 + 0.01 * mix
    failed = [c.text for c in exp.claims if c.check(flat) is False]
    assert any(t.startswith("DeepFM: CTR rises") for t in failed)
    assert not any(t.startswith("SetRank: CTR rises") for t in failed)
    swapped = dict(m, **{f"{manip}/ctr": 0.2})
    assert sum(c.check(swapped) is False for c in exp.claims) == 1


def test_experiments_are_registered_and_well_formed():
    for name in NAMES:
        exp = get(name)
        assert exp.paper == "Zhu et al. 2023" and set(exp.scales) == {"small", "paper"}
        keys = [v.key for v in exp.values]
        assert len(keys) == len(set(keys))
        for v in exp.values:
            assert v.tol > 0 and all(a.endswith("/sd") for a in v.also)
        assert "seed 002" not in " ".join(exp.notes + (exp.title, exp.data))


def test_reduced_table3_run_resumes_from_its_store(tmp_path, monkeypatch):
    from recaudit.experiment import Store
    from recaudit.reproduce import _recording as recording
    from recaudit.simulate import MIRROR_TRIALS

    monkeypatch.setitem(zs.SCALES, "small", dict(zs.SCALES["small"], seeds=2, users=40))
    rec = recording.run("zhu2023-table3", "small", tmp_path)
    assert rec["verdict"] in VERDICTS and rec["verdict"] != "not run"
    m = rec["measures"]
    assert {"dnn/mix0.5/ctr", "gru/mix0.5/auc", "planner/round20/ps", "crossing_round",
            "seeds_gru_closer/ctr"} <= set(m)
    store = tmp_path / "zhu2023-mirror-small.duckdb"

    def trials():
        with Store(store, read_only=True) as st:
            return st.read(MIRROR_TRIALS).sort_values("seed")

    first = trials()
    assert first["seed"].tolist() == [0, 1]
    assert [json.loads(c)["n_eval"] for c in first["config"]] == [40, 40]
    assert recording.run("zhu2023-table3", "small", tmp_path)["measures"] == m
    assert trials()["finished"].tolist() == first["finished"].tolist()  # not run again
    monkeypatch.setitem(zs.SCALES, "small", dict(zs.SCALES["small"], seeds=2, users=30))
    again = recording.run("zhu2023-table3", "small", tmp_path)   # another config: new trials
    assert len(trials()) == 4 and again["measures"] != m


def test_reduced_slate_run(tmp_path, monkeypatch):
    monkeypatch.setitem(z.SLATE_SCALES, "small",
                        dict(z.SLATE_SCALES["small"], seeds=1, epochs=1, train=60, eval=20))
    monkeypatch.setattr(z, "MIXES", (0.0, 1.0))
    m = get("zhu2023-figure8").run(tmp_path, "small")
    assert {"greedy/ctr", "unbiased/fctr", "setrank/mix1/ctr", "lambdafm/mix0/auc"} <= set(m)
    assert m["unbiased/mani_score"] == 1.0
