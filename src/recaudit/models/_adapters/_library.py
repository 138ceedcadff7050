"""Shared shape of the adapters to other libraries' user-scoring models (LensKit, implicit).

An adapter is a :class:`RatingRecommender` (seen-item exclusion, fallback ordering, the
protocol's ``rank``) configured by an :class:`AdapterConfig` (its fields are the keyword
arguments; ``exclude_seen`` is always one) that learns from explicit ratings
(``feedback = "explicit"``) or from interaction counts (``"implicit"``). The library is
imported in ``fit`` only (an optional extra), with a clear error naming the extra when absent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import ClassVar

import scipy.sparse as sp

from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.models._cf import RatingConfig, RatingRecommender, count_matrix, rating_matrix

__all__ = ["AdapterConfig", "LibraryAdapter", "require", "single_threaded"]


@contextlib.contextmanager
def single_threaded(setup: Callable[[], None] | None = None) -> Iterator[None]:
    """Run the block on one torch intra-op thread and one BLAS thread, then restore both.

    Float sums depend on the thread count, so one thread makes results the same on every
    machine. ``setup`` runs first inside the block: a library's own one-time global
    configuration (LensKit's ``ensure_parallel_init`` sets torch's and BLAS's thread counts
    for the whole process), which this context then undoes on exit.
    """
    import torch
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    with threadpool_limits(limits=None):  # restores every BLAS library's limit on exit
        try:
            if setup is not None:
                setup()
            torch.set_num_threads(1)
            with threadpool_limits(limits=1, user_api="blas"):
                yield
        finally:
            torch.set_num_threads(before)


def require(module: str, extra: str, model: str):
    """Import ``module`` or fail with how to install the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"model {model!r} needs the optional package {extra!r}: "
                          f"pip install 'recaudit[{extra}]'") from exc


@dataclass(frozen=True)
class AdapterConfig(RatingConfig):
    """Options of an adapted model (see the subclasses): integer options are counts (>= 1),
    number options are rates or weights (>= 0)."""

    def validate(self) -> None:
        super().validate()
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if hints[f.name] is int and v < 1:
                raise self.invalid(f.name, f"must be an integer >= 1, got {v!r}")
            if hints[f.name] is float and not v >= 0:
                raise self.invalid(f.name, f"must be a number >= 0, got {v!r}")


class LibraryAdapter(RatingRecommender):
    """Base of the adapters: ``Config`` is an :class:`AdapterConfig`; ``feedback`` picks the
    matrix the library learns from."""

    feedback: ClassVar[str] = "explicit"

    def _matrix(self, train: Interactions) -> sp.csr_array:
        return rating_matrix(train) if self.feedback == "explicit" else count_matrix(train)
