"""The packages that offer their names lazily (:mod:`recaudit._lazy`): each name imports from
the module its ``__init__`` says, the names a type checker sees under ``if TYPE_CHECKING:``
are exactly those, and every name of ``__all__`` can be imported."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import recaudit

SRC = Path(recaudit.__file__).resolve().parent


def _lazy_packages() -> list[str]:
    found = [mod.name for mod in pkgutil.walk_packages(recaudit.__path__, "recaudit.")
             if mod.ispkg and "exports(__name__" in _init(mod.name).read_text()]
    return sorted(found)


def _init(package: str) -> Path:
    return SRC.joinpath(*package.split(".")[1:], "__init__.py")


def _tables(package: str) -> tuple[set[tuple[str, str, str]], set[tuple[str, str, str]]]:
    """``(module, name, offered as)`` of the ``exports`` table and of the ``TYPE_CHECKING``
    imports of ``package``'s ``__init__``."""
    tree = ast.parse(_init(package).read_text())
    table: set[tuple[str, str, str]] = set()
    checked: set[tuple[str, str, str]] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and getattr(node.value.func, "id", "") == "exports"):
            for module, names in ast.literal_eval(node.value.args[1]).items():
                module = package + module if module.startswith(".") else module
                for name in names:
                    attr, _, alias = name.partition(" as ")
                    table.add((module, attr, alias or attr))
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    checked |= {(str(imp.module), a.name, a.asname or a.name) for a in imp.names}
    return table, checked


def test_the_lazy_packages_are_found():
    assert {"recaudit.audit", "recaudit.experiment", "recaudit.models",
            "recaudit.models.sequential", "recaudit.perturb"} <= set(_lazy_packages())


@pytest.mark.parametrize("package", _lazy_packages())
def test_the_names_offered_are_those_a_type_checker_sees(package):
    table, checked = _tables(package)
    assert table, f"{package}: no exports table found"
    assert table == checked


@pytest.mark.parametrize("package", _lazy_packages())
def test_every_public_name_imports_from_its_module(package):
    pkg = importlib.import_module(package)
    table, _ = _tables(package)
    for module, attr, name in table:
        assert getattr(pkg, name) is getattr(importlib.import_module(module), attr), name
    assert set(pkg.__all__) <= set(dir(pkg))
    for name in pkg.__all__:
        getattr(pkg, name)
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'nope'"):
        pkg.nope  # noqa: B018 - the attribute access is the test


def test_a_name_is_imported_when_first_asked_for():
    """``import recaudit.audit`` imports the module that declares its tables and not the
    analysis; asking for ``slices`` imports it (and, with it, scipy.stats)."""
    code = ("import sys, recaudit.audit as a\n"
            "print('recaudit.audit._slices' in sys.modules, 'scipy.stats' in sys.modules)\n"
            "from recaudit.audit import slices\n"
            "print('recaudit.audit._slices' in sys.modules, 'scipy.stats' in sys.modules,\n"
            "      'slices' in vars(a))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False", "True", "True", "True"]


@pytest.mark.parametrize("package", _lazy_packages())
def test_dir_lists_what_the_package_offers_not_its_imports(package):
    # issue 60, item 9: dir(recaudit.audit) listed `annotations` and `TYPE_CHECKING` (and
    # `exports`), which tab completion and inspect.getmembers take for the package's own
    import types

    mod = importlib.import_module(package)
    public = {n for n in dir(mod) if not n.startswith("_")
              and not isinstance(getattr(mod, n), types.ModuleType)}
    assert not public & {"annotations", "TYPE_CHECKING", "exports"}
    lazy = {offered for _, _, offered in _tables(package)[0]}
    assert public <= set(mod.__all__) | lazy       # nothing but what it offers
    assert set(mod.__all__) | lazy <= set(dir(mod))
