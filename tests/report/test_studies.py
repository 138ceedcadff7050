"""Report sections of the other studies: property templates (Shriver 2018 Ch. 3), fuzzing
(Shriver 2018 Ch. 4) and MIRROR (Zhu et al. 2023), from small files written by the real code paths."""

import math

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import DatasetSpec, ModelSpec
from recaudit.cli import main
from recaudit.data import Interactions
from recaudit.errors import RecauditError
from recaudit.report import build_report, render_html, render_latex, render_markdown, write_report

EVIL = "tiny<script>alert(2)</script>"
MODELS = "item-item,slope-one"


def _log() -> Interactions:
    """40 users x 30 items, 400 unique ratings in half stars, increasing timestamps."""
    rng = np.random.default_rng(11)
    keys = rng.choice(40 * 30, size=400, replace=False)
    return Interactions.from_codes(keys // 30, keys % 30, timestamp=np.arange(400) * 1000,
                                   rating=rng.integers(2, 11, 400) / 2, n_users=40,
                                   n_items=30, name="tiny")


def _write_properties(path, log):
    import recaudit.data.datasets as ds

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ds, "load", lambda name, **kw: log)
        for extra in ([], ["--evolving"]):
            assert main(["properties", "--dataset", EVIL, "--models", MODELS, "--k", "5",
                         "--folds", "2", "--output", str(path), *extra]) == 0


def _write_fuzz(path, csv):
    from recaudit.fuzz import FuzzStudy, run_study

    run_study(FuzzStudy(models=(ModelSpec("slope-one"),),
                        heuristics=("ZERO", "ARAND", "AMU", "RRAND", "RMU", "CBRAND", "CMU",
                                    "APORTFOLIO"),
                        sizes=(1, 10), sets=4, k=5, portfolio=("AMU", "AMR"), output=str(path),
                        dataset=DatasetSpec("file", path=str(csv), min_user_interactions=0)))


def _write_mirror(path):
    assert main(["simulate", "mirror", "--scenario", "topic-sequential", "--mix", "0,0.5,1",
                 "--seeds", "2", "--algorithms", "DNN", "--n-train", "20", "--n-eval", "20",
                 "--epochs", "1", "--output", str(path)]) == 0


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("studies")
    log = _log()
    csv = tmp / "log.csv"
    log.to_df().to_csv(csv, index=False)
    out = {"log": log, "csv": csv}
    for kind, write in (("properties", lambda p: _write_properties(p, log)),
                        ("fuzz", lambda p: _write_fuzz(p, csv)), ("mirror", _write_mirror)):
        out[kind] = tmp / f"{kind}.duckdb"
        write(out[kind])
    return out


def _section(report, key):
    return next(s for s in report.sections if s.key == key)


def _facts(report):
    return dict(report.facts)


def _models():
    from recaudit.models import create

    return {n: (lambda n=n: create(n)) for n in MODELS.split(",")}


def test_property_only_file(files):
    from recaudit.properties import evolving_study, property_table

    report = build_report(files["properties"])
    assert [s.key for s in report.sections] == ["properties"]
    assert "property templates (Table 3.4)" in _facts(report)["holds"]
    assert report.title.startswith("Property study")
    table, evolving, steps = _section(report, "properties").tables
    # Table 3.4 against the study's own DataFrame (same data, k, folds, seed as the CLI)
    expected = property_table(_models(), files["log"], k=5, folds=2, seed=0,
                              item_noun="items")
    assert table.columns == ("category", "property", "item-item", "slope-one")
    assert "Legend: NRANKS = Number of items per Ranked list;" in table.caption
    assert "NRI = Number of Recommended Items" in table.caption
    assert [r[1].text for r in table.rows] == list(expected.index)
    for row in table.rows:
        for j, model in enumerate(expected.columns, start=2):
            v = expected.loc[row[1].text, model]
            if isinstance(v, (float, int, np.floating, np.integer)):
                assert row[j].value == pytest.approx(float(v))
            else:  # IANR: a set of attributes, IANRLCMP: an order; empty on this log
                assert row[j].value is None and len(v) == 0 and row[j].text in ("∅", "–")
    assert table.rows[0][0].text == "Accuracy" and table.rows[2][0].text == "Coverage"
    # Table 3.6: max |% change|, highlighted under 5 %
    _, summary = evolving_study(_models(), files["log"], k=5, folds=2, seed=0)
    assert [r[1].text for r in evolving.rows] == list(summary.index)
    for row in evolving.rows:
        for j, model in enumerate(summary.columns, start=2):
            v = summary.loc[row[1].text, model]
            if math.isinf(v):
                assert row[j].text == "∞"
                continue
            assert row[j].value == pytest.approx(v)
            assert (row[j].mark == "highlight") == (v < 5.0)
    assert any(r[2].mark == "highlight" for r in evolving.rows)
    assert any(r[2].mark is None for r in evolving.rows)
    assert steps.columns[2:] == ("50%", "60%", "70%", "80%", "90%", "100%", "max Δ%")
    html = render_html(report)
    assert EVIL not in html and "tiny&lt;script&gt;alert(2)&lt;/script&gt;" in html


def test_fuzz_only_file(files, tmp_path):
    from recaudit.fuzz import load_results, significance, time_table

    report = build_report(files["fuzz"])
    assert [s.key for s in report.sections] == ["fuzz", "setup"]
    assert _facts(report)["holds"] == "fuzzing study (64 trials)"
    results = load_results(files["fuzz"])
    sig = significance(results, metric="topout").set_index(["model", "size", "heuristic"])
    names = ("fuzz-time", "fuzz-add", "fuzz-remove", "fuzz-change", "fuzz-portfolio",
             "fuzz-distances")
    got = _section(report, "fuzz").tables
    tables = {n: t for t in got for n in names if t.key.startswith(n + "-")}
    assert len(got) == len(tables) == len(names)
    assert tables["fuzz-add"].columns == ("model", "M", "ZERO", "ARAND", "AMU")
    assert tables["fuzz-remove"].columns == ("model", "M", "RRAND", "RMU")
    marks = []
    for key in ("fuzz-add", "fuzz-remove", "fuzz-change"):
        t = tables[key]
        for row in t.rows:
            for col, cell in zip(t.columns[2:], row[2:], strict=True):
                s = sig.loc[(row[0].text, int(row[1].text), col)]
                assert cell.value == pytest.approx(s["mean"])
                assert (cell.mark or "") == s["mark"]
                assert cell.text.startswith("*") == bool(s["exceeds"])
                marks.append(cell.mark)
    assert "italic" in marks or "bold" in marks  # ZERO (all 0) is below ARAND at M = 10
    port = tables["fuzz-portfolio"]
    for row in port.rows:
        s = sig.loc[(row[0].text, int(row[1].text))]
        assert row[4].value == pytest.approx(s.loc["APORTFOLIO", "mean"])
        # the only single add heuristic besides ARAND and ZERO
        assert row[3].text.endswith(" (AMU)") and row[3].value == s.loc["AMU", "mean"]
    # every oracle distance side by side, six decimals as the thesis prints them
    dist = tables["fuzz-distances"]
    assert dist.columns == ("model", "M", "heuristic", "aod", "jaccard", "topout")
    assert len(dist.rows) == results.groupby(["model", "size", "heuristic"]).ngroups
    for row in dist.rows:
        cell = results[(results.model == row[0].text) & (results["size"] == int(row[1].text))
                       & (results.heuristic == row[2].text)]
        for d, c in zip(("aod", "jaccard", "topout"), row[3:], strict=True):
            assert c.value == pytest.approx(cell[d].mean())
            assert len(c.text.split(".")[1]) == 6
    times = time_table(results, kind=None)
    t = tables["fuzz-time"]
    for row in t.rows:
        assert row[2].value == pytest.approx(times.loc[row[1].text, (1, "mean")])
        assert row[5].value == pytest.approx(times.loc[row[1].text, (10, "variance")])
    # the command works on a file written only by `recaudit fuzz`
    out = tmp_path / "f.md"
    assert main(["report", str(files["fuzz"]), "-o", str(out), "--format", "markdown"]) == 0
    md = out.read_text()
    assert md.split("\n")[2] == "# Fuzzing study: fuzz.duckdb" and "Mean topout instability" in md


def test_mirror_only_file(files):
    """Both scenarios in one file written by ``recaudit simulate mirror -o`` (no other
    tables): one table per scenario with the numbers of ``summarise``, Figures 7, 8 and (for
    the sequential scenario, which has rounds) 10."""
    from recaudit.simulate import summarise

    assert main(["simulate", "mirror", "--scenario", "decoy-slate", "--mix", "0,1", "--seeds",
                 "1", "--algorithms", "DeepFM", "--n-train", "40", "--n-eval", "10",
                 "--epochs", "1", "--output", str(files["mirror"])]) == 0
    report = build_report(files["mirror"])
    assert [s.key for s in report.sections] == ["mirror"]
    assert report.title == "MIRROR benchmark: mirror.duckdb"
    import duckdb

    con = duckdb.connect(str(files["mirror"]), read_only=True)
    try:
        raw = con.execute("SELECT * FROM mirror_results").df()
    finally:
        con.close()
    rows = [{**r, "mix": None if pd.isna(r["mix"]) else r["mix"],
             "round": None if pd.isna(r["round"]) else r["round"]}
            for r in raw.to_dict(orient="records")]
    expected = summarise(rows)
    expected = expected[expected["round"].isna()]
    sec = _section(report, "mirror")
    seq, slate = sec.tables
    assert seq.title == "MIRROR · topic-sequential" and slate.title == "MIRROR · decoy-slate"
    assert seq.columns == ("algorithm", "mix α", "CTR", "FCTR", "PS", "AUC")
    assert slate.columns == ("algorithm", "mix α", "CTR", "FCTR", "ManiScore", "NDCG", "AUC")
    assert [r[0].text for r in seq.rows[:2]] == ["Unbiased Oracle", "Planner Oracle"]
    assert [r[1].text for r in seq.rows[2:]] == ["0", "0.5", "1"]
    assert [r[1].text for r in slate.rows] == ["oracle", "oracle", "0", "1"]
    names = {"CTR": "ctr", "FCTR": "fctr", "PS": "ps", "AUC": "auc", "ManiScore": "mani_score",
             "NDCG": "ndcg"}
    n = 0
    for table, scenario in ((seq, "topic-sequential"), (slate, "decoy-slate")):
        for row in table.rows:
            e = expected[(expected.scenario == scenario) & (expected.algorithm == row[0].text)]
            e = e[e.mix.isna()] if row[1].text == "oracle" else e[e.mix == float(row[1].text)]
            for col, cell in zip(table.columns[2:], row[2:], strict=True):
                m = e[e.metric == names[col]]
                if m.empty:
                    assert cell.text == "–"
                    continue
                assert cell.value == pytest.approx(m["mean"].iloc[0])
                low, high = m["ci_low"].iloc[0], m["ci_high"].iloc[0]
                if np.isnan(low):  # one seed: no interval
                    assert cell.low is None
                else:
                    assert (cell.low, cell.high) == pytest.approx((low, high))
                n += 1
    assert n >= 14 + 14
    assert slate.rows[0][4].value == 1.0  # the Unbiased Oracle's ManiScore (Def. 4.5)
    assert [f.key.rsplit("-", 1)[0] for f in sec.figures] == [
        "mix-topic-sequential", "traj-topic-sequential", "rounds-topic-sequential",
        "mix-decoy-slate", "traj-decoy-slate"]  # no rounds in the slate scenario
    assert all(f.svg.startswith("<svg") for f in sec.figures)


def test_all_kinds_with_an_audit(files, tmp_path, make_store, request):
    path = tmp_path / "all.duckdb"
    make_store(path, models=("gru4rec",), seeds=(0, 1), n_queries=20,
               perturbations=("none", "seed-only", "random-delete", "casper-delete"))
    _write_properties(path, files["log"])
    _write_fuzz(path, files["csv"])
    _write_mirror(path)
    report = build_report(path)
    assert [s.key for s in report.sections] == ["rls", "accuracy", "groups", "properties",
                                                "fuzz", "mirror", "setup"]
    holds = _facts(report)["holds"]
    for kind in ("stability audit", "property templates", "evolving-dataset study",
                 "fuzzing study", "MIRROR benchmark"):
        assert kind in holds
    assert report.title == "Audit report: report-test"
    keys = {t.key.split("-")[0] for t in report.tables}
    assert {"properties", "evolving", "fuzz", "mirror", "config", "timings"} <= keys
    md, tex = render_markdown(report), render_latex(report)
    assert "### Mean topout instability, add modifications" in md
    assert "### MIRROR · topic-sequential" in md and r"\$\infty\$" not in tex
    assert tex.count(r"\begin{tabular}") == len(report.tables)
    assert r"\textless{}script\textgreater{}" in tex
    names = {p.name for p in write_report(path, tmp_path / "csv", "csv")}
    assert {"properties.csv", "evolving.csv", "evolving-steps.csv", "fuzz-config.csv"} <= names
    assert any(n.startswith("mirror-topic-sequential") for n in names)
    prop = pd.read_csv(tmp_path / "csv" / "properties.csv").set_index("property")
    cell = _section(report, "properties").tables[0].rows[0][2]
    assert float(prop.loc["Precision", "item-item"]) == pytest.approx(cell.value)  # mixed col
    assert prop.loc["IANR", "item-item"] == "∅"
    html_path = tmp_path / "all.html"
    write_report(path, html_path)
    # last, so the checks above run even where chromium is absent (the fixture skips)
    _check_in_chromium(html_path, request.getfixturevalue("chromium_dom"))


def _check_in_chromium(html_path, dom):
    tags, text = dom(html_path)
    assert tags.get("script", 0) == 0
    assert tags.get("svg", 0) >= 3 + 3  # audit figures + the three MIRROR figures
    assert EVIL in text  # the property study's dataset name, shown as text
    for title in ("Property templates", "Fuzzing: stability", "MIRROR: manipulation"):
        assert title in text


def test_file_without_results_is_a_clear_error(tmp_path):
    import duckdb

    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE unrelated (x INTEGER)")
    con.close()
    with pytest.raises(RecauditError, match="nothing to report"):
        build_report(path)
