"""Claims decided by tests on recorded samples: holds / contradicted / undecided, Holm across
an experiment, equivalence, Kleene combinations, and the samples a record keeps."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from recaudit.reproduce import Claim, Experiment, Measures, Value, evaluate_claims, verdict
from recaudit.reproduce import _recording as recording
from recaudit.reproduce.rules import (All, AnyOf, Bound, Contrast, Less, Not, Within,
                                      among_lowest, decide, ordered)


def _frame(values, replicates=None):
    values = np.asarray(values, dtype=float)
    reps = ["0"] * len(values) if replicates is None else [str(r) for r in replicates]
    units = [str(i % (len(values) // len(set(reps)))) for i in range(len(values))] \
        if replicates is not None else [str(i) for i in range(len(values))]
    return pd.DataFrame({"replicate": reps, "unit": units, "value": values})


def _measures(**cols) -> Measures:
    frames = {k: _frame(v) for k, v in cols.items()}
    return Measures({k: float(np.mean(v)) for k, v in cols.items()}, frames)


def test_a_paired_difference_holds_reverses_or_stays_undecided():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 0.9, 300)
    noise = 0.02 * rng.standard_normal(300)
    for shift, expected in ((-0.02, True), (0.02, False), (0.0, None)):
        m = _measures(a=base + shift + noise, b=base)
        (truth,), found = decide([Less("a", "b")], m.samples, m, 0.05)
        f = next(iter(found.values()))
        assert truth is expected, shift
        assert f.test in ("paired-t", "wilcoxon")
        d = base - (base + shift + noise)
        ref = stats.ttest_1samp(d, 0).pvalue if f.test == "paired-t" else \
            stats.wilcoxon(d).pvalue
        assert f.p == pytest.approx(ref, rel=1e-9)     # one replicate: the protocol's p
        assert f.difference == pytest.approx(d.mean())
        if expected is None:
            assert f.detectable > abs(f.difference)


def test_unpaired_samples_use_welch():
    a = _frame([0.10, 0.12, 0.11, 0.13, 0.12])
    b = _frame([0.20, 0.22, 0.19, 0.21, 0.20]).assign(unit=lambda f: "b" + f.unit)
    m = Measures({"a": a.value.mean(), "b": b.value.mean()}, {"a": a, "b": b})
    (truth,), found = decide([Less("a", "b")], m.samples, m, 0.05)
    f = next(iter(found.values()))
    assert truth is True and f.test == "welch"
    assert f.p == pytest.approx(stats.ttest_ind(b.value, a.value, equal_var=False).pvalue)


def test_holm_is_applied_over_the_experiments_comparisons():
    rng = np.random.default_rng(1)
    base = rng.uniform(0.5, 0.9, 40)
    cols = {f"k{i}": base - 0.004 * i + 0.01 * rng.standard_normal(40) for i in range(5)}
    m = _measures(base=base, **cols)
    rules = [Less(f"k{i}", "base") for i in range(5)]
    _, found = decide(rules, m.samples, m, 0.05)
    raw = sorted(f.p for f in found.values())
    adj = sorted(f.p_adjusted for f in found.values())
    expect = np.maximum.accumulate(np.minimum(1, np.array(raw) * np.arange(5, 0, -1)))
    assert adj == pytest.approx(list(expect))


def test_seeds_needed_for_an_undecided_difference_across_replicates():
    rng = np.random.default_rng(2)
    seeds = np.repeat([0, 1], 200)
    base = np.tile(rng.uniform(0.5, 0.9, 200), 2)
    seed_effect = np.where(seeds == 0, 0.01, -0.006)  # the seeds disagree
    a = base - 0.004 + seed_effect + 0.002 * rng.standard_normal(400)
    fa, fb = _frame(a, seeds), _frame(base, seeds)
    m = Measures({"a": a.mean(), "b": base.mean()}, {"a": fa, "b": fb})
    (truth,), found = decide([Less("a", "b")], m.samples, m, 0.05)
    f = next(iter(found.values()))
    assert truth is None and f.levels == "seeds and queries"
    assert f.needed is not None and f.needed > 2


def test_equivalence_by_two_one_sided_tests():
    rng = np.random.default_rng(3)
    base = rng.uniform(0.2, 0.4, 500)
    near = base * (1 + 0.005 * rng.standard_normal(500))    # within 5 %: holds
    far = base * 1.2 + 0.001 * rng.standard_normal(500)     # 20 % off: contradicted
    noisy = base + 0.3 * rng.standard_normal(500)           # cannot tell
    m = _measures(base=base, near=near, far=far, noisy=noisy[:500])
    rules = [Within("near", "base", 0.05), Within("far", "base", 0.05),
             Within("noisy", "base", 0.05), Within("base", "base", 0.05)]
    truths, found = decide(rules, m.samples, m, 0.05)
    assert truths == [True, False, None, True]  # identical values: inside any margin
    # the report says where the interval lies against the margin, and that p does not decide
    from recaudit.reproduce._report import _test

    margin = 0.05 * base.mean()
    shown = [_test(found[id(r)].to_dict()) for r in rules[:3]]
    assert all(found[id(r)].margin == pytest.approx(margin) for r in rules)
    assert [s.split(" — ")[0].rsplit(": ", 1)[1] for s in shown] == \
        ["yes", "**opposite**", "undecided"]
    assert [s.split("] ")[1].split(" the margin")[0] for s in shown] == \
        ["inside", "outside", "across"]
    assert all(f"the margin ±{margin:.4f}" in s and "which does not decide it" in s
               for s in shown)


def test_kleene_combinations():
    rng = np.random.default_rng(4)
    base = rng.uniform(0.5, 0.9, 200)
    e = lambda s: base + s + 0.005 * rng.standard_normal(200)  # noqa: E731
    m = _measures(low=e(-0.05), mid=e(0.0), high=e(0.05), same=e(0.0))
    cases = [(ordered("low", "mid", "high"), True), (ordered("high", "mid"), False),
             (All(Less("low", "mid"), Less("mid", "same")), None),
             (AnyOf(Less("mid", "same"), Less("low", "mid")), True),
             (Not(Less("high", "mid")), True), (Not(Less("mid", "same")), None),
             (among_lowest("mid", ["low", "high"], 2), True),
             (among_lowest("high", ["low", "mid"], 2), False),
             (Bound("high", 0.5, below=False), True)]
    truths, _ = decide([r for r, _ in cases], m.samples, m, 0.05)
    assert truths == [t for _, t in cases]


def test_a_paired_contrast_is_the_per_pair_combination():
    rng = np.random.default_rng(5)
    seeds = np.arange(10)
    curve = {x: 0.2 + 0.05 * x + 0.01 * rng.standard_normal(10) for x in (0.0, 0.5, 1.0)}
    frames = {f"m{x:g}": pd.DataFrame({"replicate": seeds.astype(str), "unit": "all",
                                       "value": v}) for x, v in curve.items()}
    m = Measures({k: f.value.mean() for k, f in frames.items()}, frames)
    rule = Contrast(tuple((f"m{x:g}", x - 0.5) for x in curve), "slope > 0")
    (truth,), found = decide([rule], m.samples, m, 0.05)
    per_seed = sum((x - 0.5) * v for x, v in curve.items())
    f = next(iter(found.values()))
    assert truth is True and f.difference == pytest.approx(per_seed.mean())
    assert f.p == pytest.approx(stats.ttest_1samp(per_seed, 0).pvalue, rel=1e-6) or \
        f.test == "wilcoxon"


def test_a_tie_leaves_a_strict_claim_undecided_and_its_negation_true():
    """Both sides constant and equal (Shriver 2018 Table 4.6 at size 1: TopOut 0 in every
    set of both heuristics): "a beats b" is not contradicted by the absence of variance, and
    "a never beats b" holds by its exact meaning."""
    m = _measures(a=np.zeros(5), b=np.zeros(5))
    for rule in (Less("a", "b"), Less("a", "b", above=True), Bound("a", 0.0),
                 Bound("a", 0.0, below=False)):
        (truth,), found = decide([rule], m.samples, m, 0.05)
        f = found[id(rule)]
        assert truth is None and f.tie and f.test == "constant", rule
        assert decide([Not(rule)], m.samples, m, 0.05)[0] == [True], rule
    # Kleene over ties: "some heuristic beats b" undecided, "none beats b" true
    beats = [Less(k, "b", above=True) for k in ("a", "c")]
    m = _measures(a=np.zeros(5), b=np.zeros(5), c=np.zeros(5))
    assert decide([AnyOf(*beats)], m.samples, m, 0.05)[0] == [None]
    assert decide([Not(AnyOf(*beats))], m.samples, m, 0.05)[0] == [True]
    assert decide([All(*beats)], m.samples, m, 0.05)[0] == [None]
    # a tie among decided comparisons changes nothing else: one significantly above b, one
    # tied: "every one beats b" undecided, "none beats b" false, "some beats b" true
    m = _measures(a=np.zeros(5), b=np.zeros(5), c=np.full(5, 0.5))
    assert decide([All(*beats), Not(AnyOf(*beats)), AnyOf(*beats)], m.samples, m,
                  0.05)[0] == [None, False, True]


def test_constant_but_unequal_values_are_decided_as_computed():
    m = _measures(a=np.ones(50), b=np.full(50, 2.0))
    assert decide([Less("a", "b"), Less("b", "a")], m.samples, m, 0.05)[0] == [True, False]
    assert decide([Not(Less("b", "a"))], m.samples, m, 0.05)[0] == [True]
    assert decide([Bound("a", 0.5)], m.samples, m, 0.05)[0] == [False]


def test_a_tie_inside_an_equivalence_margin_is_no_strict_claim():
    m = _measures(a=np.ones(20), b=np.ones(20))
    rule = Within("a", "b", 0.05)
    assert decide([rule], m.samples, m, 0.05)[0] == [True]
    assert decide([Not(rule)], m.samples, m, 0.05)[0] == [False]


def test_a_tie_of_point_values_reads_like_a_sampled_tie():
    m = Measures({"a": 3.0, "b": 3.0})
    assert decide([Less("a", "b")], {}, m, 0.05)[0] == [None]
    assert decide([Not(Less("a", "b"))], {}, m, 0.05)[0] == [True]


def test_a_one_draw_perturbation_pairs_with_a_drawn_one_per_seed():
    """A perturbation that draws nothing at random has draw 0 only ("<seed>:0"); against one
    with three draws per seed the pairs are (seed, unit), the drawn side averaged over its
    draws — the same paired test as on those averages, not Welch's unpaired one."""
    from recaudit.stats import paired_test

    rng = np.random.default_rng(3)
    queries, seeds = 80, (0, 1)
    fixed = pd.DataFrame([{"replicate": f"{s}:0", "unit": str(q),
                           "value": 0.6 + 0.1 * s + 0.001 * q} for s in seeds
                          for q in range(queries)])
    drawn = pd.DataFrame([{"replicate": f"{s}:{d}", "unit": str(q),
                           "value": 0.62 + 0.1 * s + 0.001 * q + 0.01 * rng.standard_normal()}
                          for s in seeds for d in range(3) for q in range(queries)])
    m = Measures({"fixed": fixed.value.mean(), "drawn": drawn.value.mean()},
                 {"fixed": fixed, "drawn": drawn})
    (truth,), found = decide([Less("fixed", "drawn")], m.samples, m, 0.05)
    f = next(iter(found.values()))
    means = drawn.assign(seed=drawn.replicate.str[0]).groupby(["seed", "unit"],
                                                                sort=False).value.mean()
    t = paired_test(means.to_numpy(), fixed.value.to_numpy(),
                    fixed.replicate.str[0].to_numpy(), fixed.unit.to_numpy())
    assert f.test == t.test != "welch" and f.levels == "seeds and queries"
    assert f.difference == pytest.approx(t.difference) and f.p == pytest.approx(t.p)
    assert truth is True


def _sampled_exp(frames):
    def runner(w, s, n):
        return Measures({k: float(f.value.mean()) for k, f in frames.items()}, frames)
    return Experiment(
        name="fake-sampled", paper="Nobody et al. 2099", title="A fake", artefacts="Table 9",
        data="none", scales={"small": "tiny"}, runner=runner,
        values=(Value("a", "a", 0.50, "Table 9", tol=0.0),),
        claims=(Claim("a below b", "§1", Less("a", "b")),))


def test_records_keep_samples_and_the_report_reads_them(tmp_path, monkeypatch):
    rng = np.random.default_rng(6)
    base = rng.uniform(0.4, 0.6, 120)
    frames = {"a": _frame(base - 0.01 + 0.001 * rng.standard_normal(120)),
              "b": _frame(base)}
    exp = _sampled_exp(frames)
    monkeypatch.setattr(recording, "PAPERS", ())
    monkeypatch.setattr(recording, "_EXTRA", {exp.name: exp})
    rec = recording.run(exp.name, "small", tmp_path / "stores", records=tmp_path / "records")
    folder = tmp_path / "records" / exp.name / "small"
    assert (folder / "record.json").exists() and (folder / "samples.parquet").exists()
    assert not (tmp_path / "stores" / exp.name / "small" / "record.json").exists()
    kept = pd.read_parquet(folder / "samples.parquet")          # compact: a column a key
    assert list(kept.columns) == ["replicate", "unit", "a", "b"] and len(kept) == 120
    assert str(kept["a"].dtype) == "float64"                    # a small key: kept exact
    assert rec["claims"][0]["state"] == "holds" and rec["verdict"] in (
        "reproduced", "direction reproduced")
    low, high = rec["values"][0]["ci"]
    assert low < frames["a"].value.mean() < high
    assert rec["values"][0]["match"] == (low <= 0.5 <= high)
    on_disk = json.loads((folder / "record.json").read_text())
    loaded = recording.load_measures(tmp_path / "records", on_disk)
    assert evaluate_claims(exp, loaded)[0]["tests"][0]["test"] in ("paired-t", "wilcoxon")
    from recaudit.reproduce import render_report
    page = render_report(tmp_path / "records")
    assert "- holds: a below b (§1)" in page and "Holm" in page


def test_verdict_undecided_when_nothing_is_contradicted():
    rng = np.random.default_rng(7)
    base = rng.uniform(0.4, 0.6, 30)
    frames = {"a": _frame(base + 0.05 * rng.standard_normal(30)), "b": _frame(base)}
    exp = _sampled_exp(frames)
    m = exp.run(__import__("pathlib").Path("/nonexistent-unused"), "small") \
        if False else exp.runner(None, "small", 1)
    assert verdict(exp, m) == "undecided"


def _partial_exp(rule):
    return Experiment(name="fake-partial", paper="Nobody et al. 2099", title="A fake",
                      artefacts="Table 9", data="none", scales={"small": "tiny"},
                      runner=lambda w, s, n: {}, claims=(Claim("c is among the lowest", "§1",
                                                                rule),))


def test_a_claim_its_missing_comparisons_cannot_change_is_decided():
    """'c among the two lowest of c, a, b, x' with x not measured: c significantly below a and
    b settles it whatever x gives; c below a only leaves it to x (not measured)."""
    rng = np.random.default_rng(8)
    base = rng.uniform(0.5, 0.9, 200)
    noise = 0.002 * rng.standard_normal(200)
    rule = among_lowest("c", ["a", "b", "x"], 2)
    settled = _measures(c=base - 0.02 + noise, a=base, b=base + 0.01)
    (claim,) = evaluate_claims(_partial_exp(rule), settled)
    assert claim["state"] == "holds" and claim["missing"] == ["x"]
    open_ = _measures(c=base - 0.02 + noise, a=base, b=base - 0.05)
    (claim,) = evaluate_claims(_partial_exp(rule), open_)
    assert claim["state"] == "not measured" and claim["holds"] is None
    lost = _measures(c=base + noise, a=base - 0.02, b=base - 0.05)   # two below c: false
    (claim,) = evaluate_claims(_partial_exp(rule), lost)
    assert claim["state"] == "contradicted"
    none = evaluate_claims(_partial_exp(rule), _measures(z=base))[0]
    assert none["state"] == "not measured" and none["tests"] == []


def test_a_missing_comparison_counts_in_holms_family_with_p_one():
    rng = np.random.default_rng(9)
    base = rng.uniform(0.5, 0.9, 40)
    cols = {f"k{i}": base - 0.004 * (i + 1) + 0.01 * rng.standard_normal(40) for i in range(3)}
    m = _measures(base=base, **cols)
    rules = [Less(f"k{i}", "base") for i in range(3)] + [Less("gone", "base")]
    truths, found = decide(rules, m.samples, m, 0.05)
    assert truths[3] is None
    by_leaf = {id(r): found[id(r)] for r in rules}
    raw = [by_leaf[id(r)].p for r in rules]
    assert raw[3] == 1.0 and by_leaf[id(rules[3])].test == "not measured"
    order = np.argsort(raw)
    expect = np.maximum.accumulate(np.minimum(1, np.array(raw)[order] * np.arange(4, 0, -1)))
    got = np.array([by_leaf[id(rules[i])].p_adjusted for i in order])
    assert got == pytest.approx(expect)
