"""The documentation site: its generated references cover the code, a missing doc fails the
build, the site builds with warnings as errors, and two pages load in headless Chromium with
their navigation and search."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[2] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
pytest.importorskip("sphinx", reason="the docs extra is not installed")

import recaudit_reference as ref  # noqa: E402


@pytest.fixture
def warnings(monkeypatch):
    """The 'has no documentation' warnings a generator emits."""
    seen: list[str] = []
    monkeypatch.setattr(ref, "_missing", lambda docname, what: seen.append(what))
    return seen


def test_cli_reference_lists_every_command_and_option(warnings):
    import typer.main

    from recaudit.cli import app

    text = ref._cli("reference/cli")
    root = typer.main.get_command(app)
    paths = [" ".join(p) for p, _ in ref._commands(root, ("recaudit",))]
    assert len(paths) >= 15 and "recaudit reproduce run" in paths
    for path in paths:
        assert f"## `{path}`" in text
    assert "`--min-interactions`" in text and "`--dry-run`" in text  # options of `audit`
    assert warnings == []


def test_config_reference_has_every_key_of_every_config(warnings):
    import dataclasses

    from recaudit.audit import AuditConfig, ExecutorSpec
    from recaudit.fuzz import FuzzStudy

    text = ref._config("reference/config")
    for cls in (AuditConfig, ExecutorSpec, FuzzStudy):
        section = text.split(f"### `{cls.__name__}`", 1)[1].split("\n### ", 1)[0]
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in section, (cls.__name__, f.name)
    assert warnings == []


def test_models_and_store_references_cover_the_registries(warnings):
    from recaudit.experiment import TABLES
    from recaudit.models import PRESETS, available

    models = ref._models("reference/models")
    assert all(f"## `{n}`" in models for n in available())
    assert all(f"### `{k}`" in models for k in PRESETS)
    store = ref._store("reference/store")
    for table in TABLES.values():
        assert f"## `{table.name}`" in store
        assert all(f"| `{c.name}` |" in store for c in table.columns)
    assert warnings == []


def test_an_undocumented_column_or_option_is_a_warning(warnings, monkeypatch):
    from recaudit.experiment import TABLES
    from recaudit.experiment._schema import Table, columns

    monkeypatch.setitem(TABLES, "bare", Table("bare", columns("x BIGINT")))
    ref._store("reference/store")
    assert warnings == ["store table 'bare'", "column bare.x"]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-q",
                           "-b", "html", str(DOCS), str(out)], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
    return out


@pytest.mark.slow
def test_site_builds_with_every_page(site):
    for page in ("index", "start/first-audit", "concepts/similarity", "howto/own-model",
                 "reference/cli", "reference/config", "reference/models", "reference/store",
                 "reference/api/stats", "reproduction"):
        assert (site / f"{page}.html").is_file(), page
    assert (site / "searchindex.js").is_file()
    cli = (site / "reference" / "cli.html").read_text()
    assert "recaudit audit" in cli and "--dry-run" in cli


@pytest.mark.slow
def test_two_pages_load_with_navigation_and_search(site, chromium_dom):
    tags, text = chromium_dom(site / "index.html")
    assert tags.get("nav", 0) >= 1
    for section in ("Start", "Concepts", "How-to guides", "Reference"):
        assert section in text
    assert "Search" in text or tags.get("input", 0) >= 1  # the search box
    tags, text = chromium_dom(site / "reference" / "cli.html")
    assert "recaudit audit" in text and tags.get("table", 0) >= 5
    # the search page finds a word through the built index (JavaScript ran)
    url = (site / "search.html").resolve().as_uri() + "?q=jaccard"
    tags, text = chromium_dom(url, "--virtual-time-budget=10000")
    assert "matching the search query" in text  # "Search finished, found N pages ..."
    assert "recaudit.metrics" in text  # the jaccard function's entry


@pytest.mark.slow
def test_formulas_are_mathml_and_the_site_loads_nothing_from_the_network(site, chromium_dom):
    """Formulas are rendered when the site is built (``_ext/recaudit_mathml.py``): a site
    opened offline shows them, no page loads a script or style sheet from elsewhere."""
    import re

    page = (site / "concepts" / "similarity.html").read_text()
    assert page.count("<math ") >= 10
    assert "\\(" not in page and "\\[" not in page      # no LaTeX left for a script to typeset
    remote = re.compile(r'<(?:script|link)[^>]+(?:src|href)="(?:https?:)?//', re.I)
    for html in site.rglob("*.html"):
        assert not remote.search(html.read_text()), html
    tags, text = chromium_dom(site / "concepts" / "similarity.html")
    assert tags.get("math", 0) >= 10 and tags.get("mi", 0) >= 10
    assert "\\(" not in text


def test_a_formula_the_converter_cannot_read_is_a_warning(monkeypatch):
    import recaudit_mathml as mathml
    from docutils import nodes

    seen = []

    class Visitor:
        body: list[str] = []

    class Log:
        def warning(self, msg, *args, **kw):
            seen.append(msg % args)

    monkeypatch.setattr(mathml, "log", Log())
    out = mathml._mathml(Visitor(), nodes.math(), r"\frac{1}{", False)
    assert "<code>" in out and seen and "cannot render" in seen[0]
    ok = mathml._mathml(Visitor(), nodes.math(), r"\mathrm{RBO}(S, T; p) = (1 - p)\sum_d p^{d-1} A_d", True)
    assert ok.startswith('<math alttext="\\mathrm{RBO}') and 'display="block"' in ok
