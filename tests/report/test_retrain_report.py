"""The report's "Stability across retrains" section: its table is :func:`recaudit.audit.
staleness` (churn = 1 − RBO, the floor's churn, decided cells bold) and its figure draws a line
per slice and way of updating, over the windows, with the floor as a band."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec,  # noqa: E402
                            run_audit, staleness)
from recaudit.report import build_report  # noqa: E402
from recaudit.report._audit._retrain import staleness_figure, staleness_table  # noqa: E402
from recaudit.report._data import load  # noqa: E402

PERTS = ("remove-last-30d", "remove-last-90d", "remove-last-90d+warm", "seed-only")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    out = tmp_path_factory.mktemp("retrain-report") / "a.duckdb"
    run_audit(AuditConfig(datasets=(DatasetSpec("synthetic", options={"n_users": 80,
                                                                      "n_items": 50}),),
                          models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                        "hidden_dim": 8}),),
                          perturbations=PERTS, seeds=(0, 1), metrics=MetricSpec(k=5),
                          output=str(out)))
    return out


def test_the_table_is_the_staleness_frame(store):
    data = load(store)
    frame = staleness(store)
    table = staleness_table(data)
    assert table is not None and len(table.rows) == len(frame) == 3 * 3
    for row, r in zip(table.rows, frame.itertuples(), strict=True):
        assert row[2].text == r.perturbation and row[4].text == r.slice
        assert row[6].value == pytest.approx(1 - r.rbo)
        assert row[6].significant == (r.p_vs_seed_only < 0.05)
        assert row[7].value == pytest.approx(1 - r.rbo_seed_only)
    assert [r.warm for r in frame.itertuples()] == [False] * 6 + [True] * 3


def test_the_section_and_its_figure(store):
    data = load(store)
    fig = staleness_figure(data, data.datasets[0], data.models()[0])
    ax = fig.axes[0]
    # three slices from scratch and three warm-started, each a line; the floor a band
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0] == "seed-only floor (95 %)"
    assert {"all", "active", "inactive"} <= set(labels) and len(labels) == 1 + 6
    scratch = [line for line in ax.get_lines() if line.get_marker() == "o"]
    warm = [line for line in ax.get_lines() if line.get_marker() == "s"]
    assert len(scratch) == len(warm) == 3
    assert {tuple(line.get_xdata()) for line in scratch} == {(30.0, 90.0)}   # days
    assert {tuple(line.get_xdata()) for line in warm} == {(90.0,)}
    report = build_report(store)
    keys = [s.key for s in report.sections]
    assert "retrain" in keys
    section = report.sections[keys.index("retrain")]
    assert section.tables[0].key == "retrain-staleness" and len(section.figures) == 1
