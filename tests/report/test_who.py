"""The report's "Who is affected" section on a small real audit: its tables are the library's
figures, and it shows what it can where the data or the lists are missing."""

from __future__ import annotations

import shutil

import duckdb
import pytest

from recaudit.audit import changes, exposure, most_changed, slices
from recaudit.audit import summary as summary_of
from recaudit.errors import RecauditWarning
from recaudit.report import build_report, render_html, render_markdown


def _who(report):
    return next(s for s in report.sections if s.key == "who")


def test_section_tables_and_figure(who_audit):
    report = build_report(who_audit.store)
    keys = [s.key for s in report.sections]
    assert keys.index("who") == keys.index("groups") + 1
    who = _who(report)
    # one slices and one users table per dataset and model (keys end in their slug)
    assert [t.key.split("-")[1] for t in who.tables] == ["slices", "exposure", "users"]
    assert len(who.figures) == 1 and "<svg" in who.figures[0].svg

    table = who.tables[0].to_frame()
    want = slices(who_audit.store, ["accuracy", "activity", "popularity", "recency"])
    assert table["by"].iloc[0] == "all users"
    body = table.iloc[1:]
    perts = [c for c in table.columns if c in set(want.perturbation)]
    assert perts and perts[-1] == "seed-only"
    want = want.sort_values(["by", "slice_index"], key=lambda c: c.map(
        {"accuracy": 0, "activity": 1, "popularity": 2, "recency": 3}) if c.name == "by" else c,
        kind="stable")
    for p in perts:  # each cell: the slice's RBO minus all users' under that perturbation
        w = want[want.perturbation == p]
        assert len(body) == len(w)
        assert body[p].to_numpy() == pytest.approx(w.rbo_vs_all.to_numpy())
        assert body[f"{p} ci_low"].to_numpy() == pytest.approx(w.rbo_vs_all_ci_low.to_numpy())
        assert body["slice"].tolist() == w.slice.tolist()

    gini = who.tables[1].to_frame().set_index("perturbation")["ΔGini"]
    summary = exposure(who_audit.store).summary.set_index("perturbation")
    assert gini.to_dict() == pytest.approx(summary.gini_change.to_dict())

    users = who.tables[2].to_frame()
    worst = who.tables[2].title.split(" under ")[1].split(" · ")[0]
    rbo = summary_of(who_audit.store).set_index("perturbation").rbo.drop("seed-only")
    assert worst == rbo.idxmin() and len(users) == 5
    assert users.user.tolist() == most_changed(who_audit.store, 5, perturbation=worst,
                                               by=()).user.tolist()
    first = users.iloc[0]
    c = [x for x in changes(who_audit.store, first.user, perturbation=worst,
                            seed=int(first.seed)) if abs(x.rbo - first.RBO) < 1e-12][0]
    assert first["baseline top-k"].replace("−", "").split(", ") == list(c.baseline)
    assert first["perturbed top-k"].replace("+", "").split(", ") == list(c.perturbed)

    assert "Who is affected" in render_markdown(report)
    assert '<section id="who">' in render_html(report)


def test_without_the_data_only_the_accuracy_slices(who_audit, tmp_path):
    copy = tmp_path / "moved.duckdb"
    shutil.copy(who_audit.store, copy)
    con = duckdb.connect(str(copy))
    con.execute("UPDATE trials SET spec = replace(spec, 'log.csv', 'gone.csv')")
    con.execute("DROP TABLE datasets")  # a store written before stores kept a copy
    con.close()
    with pytest.warns(RecauditWarning, match="accuracy only"):
        report = build_report(copy, figures=False)
    who = _who(report)
    assert [t.key.split("-")[:2] for t in who.tables] == [["who", "slices"]]
    assert set(who.tables[0].to_frame().by) == {"all users", "accuracy"}
    assert "could not be read again" in who.intro


def test_no_section_without_lists(make_store, tmp_path):
    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0, 1),
                       perturbations=("random-delete", "seed-only"))
    assert "who" not in [s.key for s in build_report(store, figures=False).sections]
