"""Figures that need particular data: CASPER runtime (Figure 8(b)), a lazy import check."""

import subprocess
import sys

import pytest

from recaudit.audit import Store
from recaudit.report import build_report, load
from recaudit.report._audit._figures import runtime_points
from recaudit.report._plots import to_svg


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
    similarity = [t for t in rls.tables
                  if t.key.split("-")[:2] in (["rls", "rbo"], ["rls", "frbo"], ["rls", "jaccard"])]
    assert len(similarity) == 2 * 3  # per dataset: RBO, FRBO, Jaccard
    assert {t.title.split(" · ")[1] for t in similarity} == {"small", "large"}
    assert [t.key for t in rls.tables if t not in similarity] == ["method-tests", "rls-variance"]
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


SIX = ("none", "seed-only", "random-delete", "earliest-random-delete", "latest-random-delete",
       "casper-delete", "random-insert-popular", "random-replace-unpopular")


def test_legend_fits_the_figure_and_model_labels_are_whole(make_store, tmp_path):
    """Six perturbations and a long model label: the legend stays inside the figure (it used to
    be cut off on the left) and tick labels wrap instead of ending in '…'."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from recaudit.report import _plots as P
    from recaudit.report._audit import _figures as F

    model = "gru4rec(epochs=10,samples=window,embedding_dim=64)"
    store = make_store(tmp_path / "s.duckdb", models=(model,), seeds=(0, 1),
                       perturbations=SIX)
    data = load(store)
    label = data.models()[0]
    for make in (F.accuracy_figure, F.rls_distribution_figure):
        with P.style():
            fig = make(data, data.datasets[0])
            FigureCanvasAgg(fig).draw()
            box, page = fig.legends[0].get_window_extent(), fig.bbox
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1, make.__name__
            ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
            assert [t.replace("\n", "") for t in ticks] == [label] and "…" not in ticks[0]
            assert max(len(line) for line in ticks[0].split("\n")) <= 26


def test_legend_columns_fit_the_width():
    from recaudit.report._plots import legend_columns

    labels = ["without perturbation", "earliest-random-delete", "x", "y", "z", "w", "v"]
    n = legend_columns(labels, 12.0)
    assert 1 <= n < len(labels) and n * (0.55 + 0.075 * 22) <= 12.0
    assert legend_columns(["a", "b"], 12.0) == 2 and legend_columns(["a" * 400], 5.0) == 1
