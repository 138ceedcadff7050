"""The package check of CI (``.ci/package_check.py``) finds what it is there to find: a file of
the package missing from the wheel, files that do not belong, metadata that differs from
``pyproject.toml`` (an unpinned torch, a lost extra, another version). Its whole run (build,
install, audit) is ``make package``; these tests feed its checks hand-made listings."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

import recaudit

ROOT = Path(__file__).resolve().parents[2]
V = recaudit.__version__
PACKAGE = {"recaudit/__init__.py", "recaudit/data/datasets.toml", "recaudit/py.typed",
           "recaudit/report/templates/report.html.j2"}


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("package_check", ROOT / ".ci" / "package_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def project():
    return tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))


def _wheel(*, drop=(), add=()):
    info = f"recaudit-{V}.dist-info/"
    names = {*PACKAGE, *(info + n for n in ("METADATA", "WHEEL", "RECORD", "entry_points.txt",
                                            "licenses/LICENSE"))}
    return sorted((names - set(drop)) | set(add))


def test_a_complete_wheel_passes_and_each_fault_is_named(check):
    assert check.wheel_problems(_wheel(), PACKAGE, V) == []
    lost = check.wheel_problems(_wheel(drop=["recaudit/data/datasets.toml"]), PACKAGE, V)
    assert any("lacks 1 file" in p and "datasets.toml" in p and "package-data" in p for p in lost)
    stray = check.wheel_problems(_wheel(add=["tests/test_x.py", "build/docs/index.html"]), PACKAGE, V)
    assert any("outside recaudit/" in p and "tests/test_x.py" in p for p in stray)
    stale = check.wheel_problems(_wheel(add=["recaudit/old.py", "recaudit/__pycache__/a.pyc"]),
                                 PACKAGE, V)
    assert any("recaudit/old.py" in p and "does not" in p for p in stale)
    assert any("bytecode" in p for p in stale)
    unlicensed = check.wheel_problems(_wheel(drop=[f"recaudit-{V}.dist-info/licenses/LICENSE"]),
                                      PACKAGE, V)
    assert unlicensed == [f"wheel's recaudit-{V}.dist-info/ lacks licenses/LICENSE"]


def test_an_sdist_holds_what_a_build_needs_and_nothing_else(check):
    top = f"recaudit-{V}/"
    good = [top + n for n in ("PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "setup.cfg",
                              "src/recaudit.egg-info/PKG-INFO", *(f"src/{p}" for p in PACKAGE))]
    assert check.sdist_problems(good, PACKAGE, V) == []
    assert check.sdist_problems([m for m in good if not m.endswith("LICENSE")], PACKAGE, V) == [
        "sdist lacks LICENSE"]
    assert any("tests/test_x.py" in p for p in check.sdist_problems(good + [top + "tests/test_x.py"],
                                                                   PACKAGE, V))
    assert any("py.typed" in p for p in check.sdist_problems(
        [m for m in good if not m.endswith("py.typed")], PACKAGE, V))


def _metadata(project, *, version=V, torch=None, drop_extra_req=None, readme=None):
    """Core metadata as the build writes it, made by hand from pyproject.toml."""
    p = project["project"]
    lines = ["Metadata-Version: 2.4", f"Name: {p['name']}", f"Version: {version}",
             f"Summary: {p['description']}", "License-Expression: MIT", "License-File: LICENSE",
             f"Requires-Python: {p['requires-python']}", "Description-Content-Type: text/markdown"]
    for dep in p["dependencies"]:
        lines.append(f"Requires-Dist: {torch if torch and dep.startswith('torch') else dep}")
    for extra, reqs in p["optional-dependencies"].items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs if r != drop_extra_req]
    body = (ROOT / "README.md").read_text("utf-8") if readme is None else readme
    return ("\n".join(lines) + "\n\n" + body).encode()


def test_metadata_is_compared_with_pyproject(check, project):
    readme = (ROOT / "README.md").read_text("utf-8")
    assert check.metadata_problems(_metadata(project), project, V, readme) == []
    loose = check.metadata_problems(_metadata(project, torch="torch>=2.13.0"), project, V, readme)
    assert any("torch is not pinned" in p for p in loose)
    assert any("requirements differ" in p and "'>=2.13.0'" in p for p in loose)
    lost = check.metadata_problems(_metadata(project, drop_extra_req="jinja2>=3.1"), project, V, readme)
    assert len(lost) == 1 and "jinja2" in lost[0] and "'report'" in lost[0]
    other = check.metadata_problems(_metadata(project, version="9.9.9"), project, V, readme)
    assert other == [f"version is '9.9.9', pyproject.toml says '{V}'"]
    assert check.metadata_problems(_metadata(project, readme="# else\n"), project, V, readme) == [
        "the description is not README.md"]
    assert check.metadata_problems(b"Metadata-Version: 2.4\nName: recaudit\n", project, V, readme)[0] \
        .startswith("invalid core metadata")


def test_entry_points_are_pyproject_s(check, project):
    text = ("[console_scripts]\nrecaudit = recaudit.cli:_entry\n\n"
            "[recaudit.perturbations]\nfuzz = recaudit.fuzz._spec\n")
    assert check.entry_point_problems(text, project) == []
    assert check.entry_point_problems(text.split("\n\n")[0], project) != []


def test_the_version_is_read_from_its_source_without_importing(check):
    assert check.source_version(ROOT / "src" / "recaudit" / "_version.py") == V
    assert check.torch_pin(project={"project": {"dependencies": ["numpy", "torch == 2.13.0"]}}) == \
        "torch==2.13.0"
