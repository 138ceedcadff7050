"""MIRROR's pluggable components (Zhu et al. 2023, §4.1): document set, sampler, users, features, actions.

Every component is a small typed class; a scenario is a combination of them. Nothing here holds a
random state: methods that draw take an explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = [
    "ActionModel", "CallableActionModel", "as_action_model", "DocumentSet", "FeatureExtractor",
    "DocumentSampler", "RandomSampler", "CTRWeightedSampler",
]


@runtime_checkable
class ActionModel(Protocol):
    """``M(u, d, D)`` for every position of a slate at once.

    ``click_probabilities(user, slate)`` gets the user's full (hidden included) feature vector and
    the full feature rows of the shown documents, position 1 first, and returns one click
    probability per position.
    """

    def click_probabilities(self, user: np.ndarray, slate: np.ndarray) -> np.ndarray: ...


class CallableActionModel:
    """Adapts a per-document click model ``M(u, d, D) -> probability`` to :class:`ActionModel`.

    ``fn`` may be any Python callable or a ``torch.nn.Module``; a module is called under
    ``torch.no_grad()`` with float32 tensors ``u [g]``, ``d [f]``, ``D [K, f]`` and must return a
    scalar (tensor) probability. Results outside ``[0, 1]`` raise ``ValueError``.
    """

    def __init__(self, fn: Callable) -> None:
        if not callable(fn):
            raise TypeError(f"a click model must be callable as M(u, d, D); "
                            f"got {type(fn).__name__}")
        self.fn = fn
        self._torch = _is_torch_module(fn)

    def click_probabilities(self, user: np.ndarray, slate: np.ndarray) -> np.ndarray:
        slate = np.asarray(slate, dtype=np.float64)
        if self._torch:
            import torch

            with torch.no_grad():
                u = torch.as_tensor(np.asarray(user), dtype=torch.float32)
                big = torch.as_tensor(slate, dtype=torch.float32)
                out = np.array([float(self.fn(u, big[j], big)) for j in range(slate.shape[0])])
        else:
            out = np.array([float(self.fn(user, slate[j], slate)) for j in range(slate.shape[0])])
        if not np.all(np.isfinite(out)) or np.any(out < 0) or np.any(out > 1):
            raise ValueError(f"the click model returned values outside [0, 1]: {out.tolist()}")
        return out


def _is_torch_module(obj) -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a core dependency
        return False
    return isinstance(obj, torch.nn.Module)


def as_action_model(obj) -> ActionModel:
    """``obj`` itself if it has ``click_probabilities``; else a :class:`CallableActionModel`."""
    if hasattr(obj, "click_probabilities"):
        return obj
    return CallableActionModel(obj)


@dataclass(frozen=True)
class DocumentSet:
    """All documents of a scenario and the query -> documents binding (§4.1 "Document Set").

    ``features[d]`` is document ``d``'s full feature row; ``observable[c]`` says whether column
    ``c`` may be shown to ranking algorithms; ``queries[q]`` holds the ids of query ``q``'s
    documents (a scenario without queries binds every document to query 0).
    """

    features: np.ndarray
    queries: tuple[np.ndarray, ...]
    observable: np.ndarray
    names: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        f = np.asarray(self.features, dtype=np.float64)
        if f.ndim != 2 or f.shape[0] == 0:
            raise ValueError(f"features must be a non-empty [n_docs, n_features] array; "
                             f"got shape {f.shape}")
        obs = np.asarray(self.observable, dtype=bool)
        if obs.shape != (f.shape[1],):
            raise ValueError(f"observable needs one flag per feature column ({f.shape[1]}); "
                             f"got shape {obs.shape}")
        qs = tuple(np.asarray(q, dtype=np.int64) for q in self.queries)
        for i, q in enumerate(qs):
            if q.ndim != 1 or q.size == 0 or q.min() < 0 or q.max() >= f.shape[0]:
                raise ValueError(f"query {i} must list valid document ids in [0, {f.shape[0]})")
        object.__setattr__(self, "features", f)
        object.__setattr__(self, "observable", obs)
        object.__setattr__(self, "queries", qs)

    @property
    def n_docs(self) -> int:
        return self.features.shape[0]

    def documents(self, query: int) -> np.ndarray:
        """Ids of the documents bound to ``query``."""
        return self.queries[query]


@dataclass(frozen=True)
class FeatureExtractor:
    """Keeps the observable columns of user and document features (§4.1 "Feature Extractor")."""

    user_observable: np.ndarray
    doc_observable: np.ndarray

    def users(self, users: np.ndarray) -> np.ndarray:
        return np.asarray(users, dtype=np.float64)[..., self.user_observable]

    def documents(self, docs: np.ndarray) -> np.ndarray:
        return np.asarray(docs, dtype=np.float64)[..., self.doc_observable]


class DocumentSampler(Protocol):
    """Recalls a subset of a query's documents (§4.1 "Document Sampler")."""

    def recall(self, docs: np.ndarray, rng: np.random.Generator) -> np.ndarray: ...


@dataclass(frozen=True)
class RandomSampler:
    """Recalls ``size`` of the query's documents uniformly without replacement (random order)."""

    size: int

    def recall(self, docs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.size > docs.size:
            raise ValueError(f"cannot recall {self.size} documents from a query with {docs.size}")
        return rng.choice(docs, size=self.size, replace=False)


@dataclass
class CTRWeightedSampler:
    """Recalls ``size`` documents with probability proportional to their smoothed historical CTR.

    ``(clicks[d] + prior) / (shows[d] + 2 prior)``; update the counts with :meth:`observe`.
    """

    size: int
    n_docs: int
    prior: float = 1.0
    clicks: np.ndarray = field(init=False)
    shows: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.clicks = np.zeros(self.n_docs)
        self.shows = np.zeros(self.n_docs)

    def observe(self, docs: Sequence[int], clicks: Sequence[float]) -> None:
        np.add.at(self.shows, np.asarray(docs), 1.0)
        np.add.at(self.clicks, np.asarray(docs), np.asarray(clicks, dtype=np.float64))

    def recall(self, docs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.size > docs.size:
            raise ValueError(f"cannot recall {self.size} documents from a query with {docs.size}")
        w = (self.clicks[docs] + self.prior) / (self.shows[docs] + 2 * self.prior)
        return rng.choice(docs, size=self.size, replace=False, p=w / w.sum())
