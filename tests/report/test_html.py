"""The HTML page: escaped, self-contained, with every section the store has data for."""

import re

import pytest

from recaudit.report import render_html

EVIL = "fsq-<script>alert(1)</script>"


@pytest.fixture(scope="module")
def html(fake_report):
    return render_html(fake_report)


def test_data_strings_are_escaped(html):
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "onerror" not in html


def test_self_contained(html):
    # no external resources: nothing fetched by src/href, no stylesheets, no imports
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<link" not in html and "@import" not in html and "url(http" not in html
    assert html.count("<style>") == 1


def test_every_section_table_and_figure_is_there(html, fake_report):
    for key in ("rls", "accuracy", "groups", "counts", "position", "setup"):
        assert f'<section id="{key}">' in html
    n_figures = sum(len(s.figures) for s in fake_report.sections)
    # distributions, accuracy, 2 user-group (one per model), counts, 2 position figures;
    # no runtime figure: CASPER ran on one dataset only and no benchmark is stored
    assert n_figures == 7
    assert html.count("<svg") == n_figures
    assert html.count("<table") == len(fake_report.tables)
    # the most destabilising perturbation (CASPER, clearly lowest): 3 RLS tables x 2 models
    assert html.count('<td class="best ci"') == 6 and 'class="second"' not in html
    assert "†" in html


def test_figure_ids_do_not_collide(html):
    ids = re.findall(r'<clipPath id="([^"]+)"', html)
    assert ids and len(ids) == len(set(ids))


def test_rendering_is_deterministic(fake_report, html):
    again = render_html(fake_report)
    strip = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC")
    assert strip.sub("", again) == strip.sub("", html)


def test_the_report_reads_each_model_in_one_short_line(fake_report, fake_store, html):
    # issue 40: the reading was one paragraph stringing every model's and perturbation's
    # sentence together; now one line per model: the verdict and where the floors lie
    from recaudit.audit import most_destabilising

    rls = next(s for s in fake_report.sections if s.key == "rls")
    verdicts = most_destabilising(fake_store)
    # one line per model, then (two models on one dataset: issue 47) one for the pair
    assert len(rls.reading) - 1 == len(verdicts) == fake_report.data.agg.groupby(
        ["dataset", "model_label"]).ngroups == 2
    assert rls.reading[-1].startswith("fsq-<script>alert(1)</script>: ")
    assert len(rls.reading[-1]) < 330
    for v in verdicts.itertuples():
        (line,) = [x for x in rls.reading if x.startswith(f"{v.model} on {v.dataset}: ")]
        assert (f"{v.lowest} is the most destabilising" in line) is bool(v.decided)
        assert ("undecided" in line) is not bool(v.decided)
        assert "seed-only floor at RBO" in line and len(line) < 330
    from markupsafe import escape

    assert all(str(escape(line)) in html for line in rls.reading)
    assert '<ul class="reading">' in html and "Reading" not in rls.intro


def test_a_model_label_folds_between_its_parameters_not_inside_a_word(html):
    # issue 60, item 9: "gru4rec(emb edding_dim=" — labels could wrap anywhere; they now
    # offer a break after ( , + and break a word only when it alone is wider than the column
    assert "gru4rec(<wbr>epochs=3)" in html
    assert "overflow-wrap: anywhere; white-space: normal" not in html
    assert re.search(r"tbody td\.label \{[^}]*overflow-wrap: break-word", html)
    from recaudit.report._html import breakable

    assert str(breakable("a<b>(x=1,y=2)")) == "a&lt;b&gt;(<wbr>x=1,<wbr>y=2)"
