"""Markdown, LaTeX, CSV renderers and the ``recaudit report`` command."""

import re

import pandas as pd
import pytest

from recaudit.report import render_latex, render_markdown, write_report
from recaudit.report._render import _md, _tex

EVIL = "fsq-<script>alert(1)</script>"


@pytest.fixture(scope="module")
def tables_only(fake_store):
    from recaudit.report import build_report

    return build_report(fake_store, figures=False)


def test_markdown_escapes_and_marks(tables_only):
    md = render_markdown(tables_only)
    assert "<script>" not in md and r"\<script\>" in md
    assert _md("a|b*c_d") == r"a\|b\*c\_d"
    # every table row has as many cells as its header
    for block in md.split("\n### ")[1:]:
        lines = [ln for ln in block.splitlines() if ln.startswith("| ")]
        widths = {len(re.findall(r"(?<!\\)\|", ln)) for ln in lines}
        assert len(widths) == 1, block[:80]
    best = re.findall(r"\*\*(\d\.\d{4}) ± \d\.\d{4}\*\*", md)
    assert len(best) == 3 * 2  # one best per model (2) in each of the 3 RLS tables


def test_latex_escapes_specials(tables_only):
    tex = render_latex(tables_only)
    assert r"\textless{}script\textgreater{}" in tex
    assert _tex("50% of $x_1 & {y}#~^\\") == (r"50\% of \$x\_1 \& \{y\}\#\textasciitilde{}"
                                              r"\textasciicircum{}\textbackslash{}")
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == len(tables_only.tables)
    assert r"\textbf{" in tex and r"$\pm$" in tex
    assert r"$^\dagger$" in tex  # significance marks of the position table


def test_csv_files_hold_numbers(fake_store, tmp_path, raw_rows):
    paths = write_report(fake_store, tmp_path / "csv", "csv")
    names = {p.name for p in paths}
    assert {"accuracy.csv", "position.csv", "user-groups.csv", "counts.csv", "timings.csv",
            "config.csv"} <= names
    rls = pd.read_csv(next(p for p in paths if p.name.startswith("rls-rbo-")))
    model = "gru4rec(epochs=3)"
    row = rls[rls.perturbation == "casper-delete"].iloc[0]
    per_trial = raw_rows[(raw_rows.model_label == model)
                         & (raw_rows.perturbation == "casper-delete")].groupby("seed").rbo.mean()
    assert row[model] == pytest.approx(per_trial.mean())
    assert row[f"{model} ci_low"] < row[model] < row[f"{model} ci_high"]
    pos = pd.read_csv(tmp_path / "csv" / "position.csv")
    assert "MRR Δ% p" in pos.columns and pos["MRR Δ% p"].between(0, 1).all()


def test_cli_report(fake_store, tmp_path, capsys):
    from recaudit.cli import main

    out = tmp_path / "r.md"
    assert main(["report", str(fake_store), "-o", str(out), "--format", "markdown"]) == 0
    assert out.read_text().startswith("# Stability audit: report-test")
    assert str(out) in capsys.readouterr().out
    assert main(["report", str(fake_store), "--format", "pdf"]) == 2
    assert "--format must be html, markdown, latex or csv" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.duckdb")]) == 2
    assert "no results store" in capsys.readouterr().err
