"""Torch's thread counts in a worker, fixed before its first operation, without importing it.

A worker of a pool (or a Ray task) computes with ``threads`` intra-op threads and one inter-op
thread, whatever its jobs are: float sums depend on how the work is split, so every job of
every worker must run with the same count. Importing torch only to size it cost each worker
1.7 s of its start (of 3.7 s), for nothing when its jobs never use torch (a rating-based model,
a user's numpy model, a fuzzing or MIRROR trial). So the count is set *when torch is imported*:

- torch already imported: sized now;
- not yet: a finder on ``sys.meta_path`` waits for the first ``import torch`` (our sequential
  models, a user's module, anything) and sizes the module the moment it has executed, before
  the importer gets it back, so no torch operation ever runs with the default count.

``OMP_NUM_THREADS`` would size torch too, but it would also reach the programs a command model
starts (their own thread counts, hence sums, would then differ between an in-process run and a
pool); the finder changes this process alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from types import ModuleType

__all__ = ["size_torch"]

log = logging.getLogger(__name__)


def _size(torch: ModuleType, threads: int) -> None:
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only possible before any inter-op work; then it was set already
        log.debug("torch's inter-op threads were already set in this process")


class _SizedLoader(importlib.abc.Loader):
    """Torch's own loader, then the sizing, before the importer sees the module."""

    def __init__(self, loader: importlib.abc.Loader, threads: int) -> None:
        self._loader, self._threads = loader, threads

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _size(module, self._threads)


class _SizeOnImport(importlib.abc.MetaPathFinder):
    """Finds torch once, through the other finders, and wraps its loader."""

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def find_spec(self, name: str, path: object = None, target: ModuleType | None = None
                  ) -> importlib.machinery.ModuleSpec | None:
        if name != "torch":
            return None
        _remove_finders()          # one import: the real finders answer from here on
        spec = importlib.util.find_spec("torch")
        if spec is not None and spec.loader is not None:
            spec.loader = _SizedLoader(spec.loader, self.threads)
        return spec


def _remove_finders() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _SizeOnImport)]


def size_torch(threads: int) -> None:
    """Torch in this process computes with ``threads`` intra-op threads and one inter-op
    thread: at once when torch is imported, else the moment it is (see the module docstring).
    Called again, the latest count wins."""
    if threads < 1:
        raise ValueError(f"threads must be at least 1 (got {threads})")
    torch = sys.modules.get("torch")
    if torch is not None:
        _size(torch, threads)
        return
    _remove_finders()
    sys.meta_path.insert(0, _SizeOnImport(threads))
