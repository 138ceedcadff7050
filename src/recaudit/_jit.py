"""``njit``: numba's, with its on-disk cache where numba can keep one, and without it where not.

``@njit(cache=True)`` makes numba look, when the module is imported, for a folder to cache the
compiled function in: beside the source (``__pycache__``), else the user's cache folder (or
``NUMBA_CACHE_DIR``). An install in a folder nobody may write (a system site-packages, a
read-only container image) with no writable home either has none, and numba then refuses the
function ("cannot cache function 'weights': no locator available"), which made the first
metric an error. :func:`njit` decorates as ``numba.njit`` does and, when numba finds no place
for the cache, compiles the function without one (in memory, once per process: the same
machine code, compiled again at each process's first call), saying so once in the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

__all__ = ["njit"]

log = logging.getLogger(__name__)
_SAID: list[str] = []


def njit(*args: Any, **options: Any) -> Any:
    """``numba.njit(*args, **options)``, falling back to ``cache=False`` where numba has no
    folder to cache in (module docstring). Used as ``@njit`` or ``@njit(cache=True, ...)``."""
    import numba

    def decorate(func: Callable[..., Any]) -> Any:
        if not options.get("cache"):
            return numba.njit(**options)(func)
        try:
            return numba.njit(**options)(func)
        except RuntimeError as exc:
            if "cannot cache function" not in str(exc):
                raise
            if not _SAID:
                _SAID.append(func.__module__)
                log.info("numba cannot cache compiled functions here (%s): they are compiled "
                         "in memory in each process (set NUMBA_CACHE_DIR to a writable folder "
                         "to keep them)", exc)
            return numba.njit(**{**options, "cache": False})(func)

    if len(args) == 1 and callable(args[0]) and not options:
        return decorate(args[0])
    if args:
        raise TypeError("njit takes the function, or keyword options only")
    return decorate
