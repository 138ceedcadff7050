"""Every code example of the documentation's start page, concepts and how-to guides runs (small
data), so a broken example fails the test suite; see ``_blocks`` for the conventions."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from tests.docs._blocks import Block, blocks, commands, is_slow, shown

DOCS = Path(__file__).parents[2] / "docs"
PAGES = sorted(p for folder in ("start", "concepts", "howto") for p in (DOCS / folder).glob("*.md")
               if blocks(p)) + [DOCS / "index.md"]


def _params():
    for page in PAGES:
        marks = [pytest.mark.slow] if is_slow(page) else []
        yield pytest.param(page, id=str(page.relative_to(DOCS)), marks=marks)


# an absolute path: "/" then at least two names (so `a / b` and `1/n` are not one), not inside a
# word, a URL (`https://...`) or a relative path (`results/x`)
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])(?:~|/[\w.-]+)(?:/[\w.-]+)+")


def foreign_paths(text: str, root: Path) -> list[str]:
    """The absolute paths in ``text`` outside ``root``: an example that names one depends on one
    machine's files (it passed where that file existed and failed on every other machine)."""
    return [p for p in _ABSOLUTE.findall(text)
            if not Path(os.path.expanduser(p)).resolve().is_relative_to(root.resolve())]


def _runnable_text(block: Block) -> str:
    return "\n".join(commands(block.text)) if block.kind == "console" else block.text


def _run_console(block: Block, page: Path, cwd: Path) -> None:
    """Run each ``recaudit ...`` line of ``block`` as the program does (``recaudit.cli.main``:
    its exit code, its printed error), in this process: a subprocess per line paid the
    interpreter's start and imports again, most of these tests' time. The console script
    itself is run by ``tests/cli`` (``python -m recaudit``) and the README's commands."""
    from recaudit.cli import main

    for cmd in commands(block.text):
        argv = shlex.split(cmd)
        assert argv[0] == "recaudit", f"{page.name}:{block.line}: examples run recaudit only"
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv[1:])
        assert code == 0, (
            f"{page.relative_to(DOCS)}:{block.line}: `{cmd}` exited {code}\n"
            f"{out.getvalue()[-3000:]}\n{err.getvalue()[-3000:]}")


@pytest.fixture
def own_modules(tmp_path):
    """The modules a page writes and imports (``mymodels``...) are forgotten after it: another
    page may write a module of the same name."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where.startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def registries():
    """A page may register models, perturbation families, stabilisation methods or tables
    (as its readers would): what it adds is removed after it, so no page changes another
    test's view of the registries."""
    import importlib

    from recaudit.perturb import families

    families()  # the declared families (fuzz:) first: a module imported once registers once
    held = [getattr(importlib.import_module(module), name) for module, name in (
        ("recaudit.models._registry", "_REGISTRY"), ("recaudit.perturb._registry", "_FAMILIES"),
        ("recaudit.stabilise._protocol", "_METHODS"), ("recaudit.experiment._schema", "TABLES"))]
    saved = [dict(d) for d in held]
    yield
    for d, before in zip(held, saved, strict=True):
        d.clear()
        d.update(before)


@pytest.mark.parametrize("page", list(_params()))
def test_page_examples_run(page: Path, tmp_path: Path, monkeypatch, registries,
                           own_modules) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path / ".recaudit-data"))  # no shared cache
    monkeypatch.setenv("COLUMNS", "120")
    # programs an example starts (`python train.py`) are this Python, and find its files
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(tmp_path), os.environ.get("PYTHONPATH")) if p))
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks(page):
        foreign = foreign_paths(_runnable_text(block), tmp_path)
        assert not foreign, (
            f"{page.relative_to(DOCS)}:{block.line}: the example names {foreign}, outside its own "
            "working folder: an example must run on any machine (use a relative path)")
        if block.kind == "file":
            target = tmp_path / block.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
        elif block.kind == "python":
            code = compile(block.text, f"{page.relative_to(DOCS)}:{block.line}", "exec")
            exec(code, namespace)  # noqa: S102 - the documentation's own example
        else:
            _run_console(block, page, tmp_path)


SHOWN = sorted(p for p in DOCS.rglob("*.md") if "reproduction" not in p.parts and shown(p))


def _parse_command(line: str) -> None:
    """Parse a ``recaudit ...`` line as the program would (commands, options, types) without
    running it."""
    import typer.main

    from recaudit.cli import app

    args = shlex.split(line)[1:]
    cmd, name = typer.main.get_command(app), "recaudit"
    while hasattr(cmd, "commands"):
        ctx = cmd.make_context(name, list(args))
        rest = list(getattr(ctx, "_protected_args", [])) + list(ctx.args)
        sub_name, sub, args = cmd.resolve_command(ctx, rest)
        cmd, name = sub, f"{name} {sub_name}"
    cmd.make_context(name, list(args))


def _valid_config(text: str) -> None:
    """A TOML block is a configuration (or a part of one) that one of the studies accepts."""
    import tomllib

    from recaudit.audit import AuditConfig
    from recaudit.errors import ConfigError
    from recaudit.fuzz import FuzzStudy
    from recaudit.properties import PropertyStudy
    from recaudit.simulate import MirrorConfig

    data = tomllib.loads(text)
    if {"project", "tool", "build-system"} & set(data):
        return  # a pyproject.toml snippet, not a configuration
    errors = []
    for cls in (AuditConfig, FuzzStudy, PropertyStudy, MirrorConfig):
        try:  # a part of an audit config (`[executor]` alone) is checked with a model added
            cls.from_dict({"models": ["gru4rec"], **data} if cls is AuditConfig else data)
            return
        except ConfigError as exc:
            errors.append(f"{cls.__name__}: {exc}")
    raise AssertionError("no study accepts this configuration:\n" + "\n".join(errors))


@pytest.mark.parametrize("page", SHOWN, ids=lambda p: str(p.relative_to(DOCS)))
def test_shown_commands_and_configs_are_valid(page: Path) -> None:
    for block in shown(page):
        where = f"{page.relative_to(DOCS)}:{block.line}"
        try:
            if block.kind == "command":
                _parse_command(block.text)
            else:
                _valid_config(block.text)
        except Exception as exc:  # a usage error of the program, or a config error
            raise AssertionError(f"{where}: {block.text[:200]!r}: {exc}") from exc


def test_the_checks_of_shown_blocks_reject_what_is_wrong() -> None:
    _parse_command("recaudit audit --dataset synthetic --seeds 3 --dry-run")
    _valid_config('[executor]\nkind = "process"\nworkers = 2\n')
    with pytest.raises(Exception, match="--seed"):
        _parse_command("recaudit audit --seed 3")  # no such option (it is --seeds)
    with pytest.raises(Exception, match="integer"):
        _parse_command("recaudit audit --seeds three")
    with pytest.raises(AssertionError, match="workrs"):
        _valid_config('[executor]\nworkrs = 2\n')


@pytest.mark.parametrize(("text", "found"), [
    ("recaudit status /work/runs/store.duckdb", ["/work/runs/store.duckdb"]),
    ("recaudit audit --output=/home/me/results/a.duckdb", ["/home/me/results/a.duckdb"]),
    ("open('~/data/ratings.csv')", ["~/data/ratings.csv"]),
    ("recaudit status results/reproduce/store.duckdb", []),
    ("x = 1/n + a / b  # see https://example.org/a/b", []),
])
def test_foreign_paths_are_found(text: str, found: list[str], tmp_path: Path) -> None:
    assert foreign_paths(text, tmp_path) == found


def test_a_path_inside_the_working_folder_is_not_foreign(tmp_path: Path) -> None:
    inside = tmp_path / "results" / "a.duckdb"
    assert foreign_paths(f"recaudit status {inside}", tmp_path) == []
