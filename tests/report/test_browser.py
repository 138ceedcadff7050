"""A report of a small real audit, opened in headless Chromium (skipped without it)."""

import shutil
import subprocess

import pytest

from recaudit.audit import AuditConfig, DatasetSpec, MetricSpec, ModelSpec, run_audit

EVIL = "<script>alert(1)</script>"
CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    """A tiny real audit (synthetic log saved as CSV under a hostile dataset name, tiny
    GRU4Rec, two seeds) rendered to HTML."""
    from recaudit.data import synthetic
    from recaudit.report import write_report

    tmp = tmp_path_factory.mktemp("real")
    log = synthetic(seed=5, n_users=40, n_items=30, n_clusters=4, mean_length=14)
    log.to_df().to_csv(tmp / "log.csv", index=False)
    cfg = AuditConfig(
        models=(ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                                      "batch_size": 64}),),
        perturbations=("none", "seed-only", "random-delete", "remove-end-1", "remove-end-2"),
        seeds=(0, 1), datasets=(DatasetSpec(EVIL, path=str(tmp / "log.csv")),),
        metrics=MetricSpec(k=5), output=str(tmp / "audit.duckdb"), name="tiny audit")
    run_audit(cfg)
    write_report(cfg.output, tmp / "report.html")
    return tmp / "report.html"


def test_real_report_sections(real_report):
    html = real_report.read_text()
    for key in ("rls", "accuracy", "groups", "position", "setup"):
        assert f'<section id="{key}">' in html
    assert '<section id="counts">' not in html  # no counted perturbations in this audit
    assert "<script" not in html.lower()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_report_in_headless_chromium(real_report, tmp_path, chromium_dom):
    profile = tmp_path / "profile"
    shot = tmp_path / "shot.png"
    url = real_report.resolve().as_uri()
    run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                          f"--screenshot={shot}", "--window-size=1280,2400", url],
                         capture_output=True, text=True, timeout=180)
    assert shot.exists() and shot.stat().st_size > 10_000, run.stderr[-2000:]
    from PIL import Image

    with Image.open(shot) as im:
        assert im.size == (1280, 2400)
        colours = im.convert("RGB").resize((160, 300)).getcolors(maxcolors=100_000)
        assert colours is not None and len(colours) > 50  # rendered content, not a blank page
    tags, text = chromium_dom(real_report)
    assert tags.get("script", 0) == 0  # the dataset name did not become an element
    assert tags.get("svg", 0) >= 4  # distributions, accuracy, user groups, position
    assert tags.get("table", 0) >= 6
    assert EVIL in text  # shown literally, as text
    assert "Rank-list sensitivity" in text and "Position removal" in text
