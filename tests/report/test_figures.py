"""Figures that need particular data: CASPER runtime (Figure 8(b)), a lazy import check."""

import subprocess
import sys

import pytest

from recaudit.audit import Store
from recaudit.report import build_report, load
from recaudit.report._figures import runtime_points, to_svg


def test_runtime_from_benchmark_meta(make_store, tmp_path):
    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0,),
                       perturbations=("casper-delete",))
    bench = [{"interactions": n, "seconds": n / 1e5, "label": "CASPER exact"}
             for n in (10_000, 100_000, 1_000_000)]
    with Store(store) as st:
        st.set_meta("casper_runtime", bench)
    pts = runtime_points(load(store))
    assert pts.interactions.tolist() == [1e4, 1e5, 1e6]
    assert pts.seconds.tolist() == pytest.approx([0.1, 1.0, 10.0])
    report = build_report(store)
    counts = next(s for s in report.sections if s.key == "counts")
    assert [f.key for f in counts.figures] == ["runtime"]
    assert counts.figures[0].svg.startswith("<svg")


def test_runtime_from_casper_trials_on_two_datasets(make_store, tmp_path):
    path = tmp_path / "s.duckdb"
    for name, n in (("small", 2_000), ("large", 20_000)):
        make_store(path, dataset=name, models=("gru4rec",), seeds=(0, 1),
                   perturbations=("random-delete", "casper-delete"), interactions=n)
    pts = runtime_points(load(path)).sort_values("interactions")
    # conftest writes perturb_seconds = interactions / 5000 for CASPER trials
    assert pts.interactions.tolist() == [2_000, 20_000]
    assert pts.seconds.tolist() == pytest.approx([0.4, 4.0])
    report = build_report(path)
    rls = next(s for s in report.sections if s.key == "rls")
    assert len(rls.tables) == 2 * 3  # per dataset: RBO, FRBO, Jaccard
    assert {t.title.split(" · ")[1] for t in rls.tables} == {"small", "large"}
    counts = next(s for s in report.sections if s.key == "counts")
    assert [f.key for f in counts.figures] == ["runtime"]


def test_one_dataset_gives_no_runtime_figure(make_store, tmp_path):
    store = make_store(tmp_path / "s.duckdb", models=("gru4rec",), seeds=(0,),
                       perturbations=("casper-delete",))
    assert runtime_points(load(store)).empty


def test_svg_has_no_prolog_and_text_is_drawn_as_paths(make_store, tmp_path):
    from matplotlib.figure import Figure

    fig = Figure()
    fig.subplots().set_title("<b>x</b> $y$")  # mathtext off: '$' drawn literally
    svg = to_svg(fig, "k")
    assert svg.startswith("<svg") and "<?xml" not in svg and "<b>" not in svg


def test_report_package_imports_without_matplotlib_and_jinja(fake_store, tmp_path):
    code = ("import sys; sys.modules['matplotlib'] = None; sys.modules['jinja2'] = None\n"
            "import recaudit.report, recaudit.cli\n"
            "from recaudit.cli import main\n"
            "print('imported', flush=True)\n"
            "sys.exit(main(['report', sys.argv[1], '-o', sys.argv[2]]))")
    out = subprocess.run([sys.executable, "-c", code, str(fake_store), str(tmp_path / "r.html")],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "imported", out.stderr
    assert out.returncode == 2
    assert "install the report extra" in out.stderr
