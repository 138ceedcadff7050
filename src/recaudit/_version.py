"""recaudit's version and the library versions a result records (one place for both).

``__version__`` is the version's one source: the build reads it from this file
(``[tool.setuptools.dynamic]`` in ``pyproject.toml``), so the installed metadata, ``recaudit
--version``, the reports and the records all say the same; CHANGELOG.md has a section for it."""

from __future__ import annotations

import platform

__version__ = "0.1.0"

__all__ = ["__version__", "versions"]


def versions() -> dict[str, str]:
    """recaudit, Python and the versions of the libraries a result depends on (those not
    installed are left out)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"recaudit": __version__, "python": platform.python_version()}
    for name in ("numpy", "pandas", "scipy", "torch", "numba", "duckdb"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out
