"""Names a package offers from its modules, imported when first asked for (PEP 562).

A package's ``__init__`` says which of its modules defines each public name, and
:func:`exports` gives it the module ``__getattr__`` and ``__dir__`` that import a module the
first time one of its names is asked for (``from recaudit.audit import slices`` or
``recaudit.audit.slices``). Importing a package then costs its ``__init__`` alone, and a command
imports the modules it uses and no others: ``recaudit status`` reads a store without torch,
numba or scipy, an argument error is reported before anything that would run the audit is
imported, and a pool worker imports what its trials need. scikit-learn and SciPy offer their
submodules the same way.

Each ``__init__`` repeats its lazy names under ``if TYPE_CHECKING:`` (type checkers and readers
see ordinary imports); ``tests/core/test_lazy_exports.py`` checks that the two lists agree and
that every name in ``__all__`` can be imported.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["exports"]


def exports(package: str, where: Mapping[str, Iterable[str]]
            ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` offering, for each ``module -> names`` of
    ``where``, those names of that module (``module`` absolute, or relative to ``package``
    when it starts with a dot; ``"Variant as RBOVariant"`` offers ``Variant`` under another
    name, as ``import ... as`` does). A name is imported once: it is then an attribute of the
    package like any other."""
    source: dict[str, tuple[str, str]] = {}
    for module, names in where.items():
        for name in names:
            attr, _, alias = name.partition(" as ")
            source[alias or attr] = (module, attr)

    def __getattr__(name: str) -> Any:
        if name not in source:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = source[name]
        value = getattr(importlib.import_module(module, package), attr)
        setattr(sys.modules[package], name, value)  # the next access is a plain attribute
        return value

    def __dir__() -> list[str]:
        # what the package offers: its public names (``__all__`` and the lazy ones), its
        # submodules and its private attributes; not what its ``__init__`` imported to work
        # (``TYPE_CHECKING``, ``exports``, ``annotations`` of ``from __future__``), which
        # tab completion and ``inspect.getmembers`` would list as the package's own
        mod = sys.modules[package]
        offered = set(getattr(mod, "__all__", ())) | set(source)
        return sorted(n for n in set(vars(mod)) | set(source)
                      if n in offered or n.startswith("_")
                      or isinstance(vars(mod).get(n), types.ModuleType))

    return __getattr__, __dir__
