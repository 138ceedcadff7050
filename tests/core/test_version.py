"""The version has one source, ``src/recaudit/_version.py``: the build reads it there, the
installed metadata, ``recaudit --version`` and the records say it, and CHANGELOG.md has a section
for it."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.version import Version

import recaudit

ROOT = Path(__file__).resolve().parents[2]
_SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?\s*$", re.M)


def test_the_build_reads_the_version_from_the_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    assert "version" not in project["project"], "pyproject.toml states the version a second time"
    assert "version" in project["project"]["dynamic"]
    module, _, name = project["tool"]["setuptools"]["dynamic"]["version"]["attr"].rpartition(".")
    assert getattr(importlib.import_module(module), name) == recaudit.__version__
    assert str(Version(recaudit.__version__)) == recaudit.__version__  # PEP 440, normalised


def test_no_other_source_file_states_the_version():
    literal = re.compile(rf"""["']{re.escape(recaudit.__version__)}["']""")
    stated = [p.relative_to(ROOT).as_posix()
              for p in [ROOT / "pyproject.toml", ROOT / "docs" / "conf.py",
                        *(ROOT / "src" / "recaudit").rglob("*")]
              if p.is_file() and p.suffix in (".py", ".toml", ".j2") and literal.search(p.read_text("utf-8"))]
    assert stated == ["src/recaudit/_version.py"]


def test_the_installed_metadata_says_the_same_version():
    # an editable install records the version when it is made: after a new version, `make test`
    # reinstalls (its stamp depends on _version.py), `pip install -e .` by hand does too
    assert importlib.metadata.version("recaudit") == recaudit.__version__


def test_recaudit_version_and_the_records_say_it(capsys):
    from recaudit._version import versions
    from recaudit.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"recaudit {recaudit.__version__}\n"
    assert versions()["recaudit"] == recaudit.__version__  # what stores and records keep


def test_the_changelog_has_a_section_for_this_version():
    text = (ROOT / "CHANGELOG.md").read_text("utf-8")
    sections = [(m["version"], m["date"], m.end()) for m in _SECTION.finditer(text)]
    names = [v for v, _, _ in sections]
    assert recaudit.__version__ in names, f"CHANGELOG.md has no '## [{recaudit.__version__}]' section"
    assert names.count(recaudit.__version__) == 1
    released = [(Version(v), date) for v, date, _ in sections if v != "Unreleased"]
    assert all(date for _, date in released), "a released version's heading carries its date"
    assert [v for v, _ in released] == sorted((v for v, _ in released), reverse=True), "newest first"
    assert "Unreleased" not in names[1:], "[Unreleased] comes first"
    end = {v: e for v, _, e in sections}[recaudit.__version__]
    body = _SECTION.split(text[end:], maxsplit=1)[0]
    assert re.search(r"^- \S", body, re.M), f"the {recaudit.__version__} section lists no change"
