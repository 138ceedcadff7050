"""The generalised random-regret-minimisation (RRM) action model of MIRROR's slate scenario.

Zhu et al. 2023 (TOIS), §5.1.1. A document ``d`` has a travelling time ``h`` and a price
``m`` (lower is better on both). Given the set ``E`` of *examined* documents, the user clicks
``d_i in E`` with probability

* ``|E| >= 2``:  ``p(i | E) = exp(-R_i) / (exp(L) + sum_{j in E} exp(-R_j))`` with the regret
  ``R_i = sum_{j in E, j != i} [max(h_i - h_j, 0) + max(m_i - m_j, 0)]`` (all ``eps_i = 0``);
* ``|E| = 1`` (the paper's augmentation, since a lone document has no regret):
  ``p(i | {i}) = exp(U_i) / (exp(L) + exp(U_i))`` with the utility ``U_i = -(h_i + m_i)``;

``L`` (``outside``) is the value of choosing nothing, ``L = -1`` in the paper.

Position ``k`` of a slate is examined independently with probability ``q_k`` (``(1.0, 0.8, 0.6)``
in the paper), so the click probability of the document at position ``i`` is

``p(c_i = 1) = sum_{E ⊆ positions, i in E} prod_{k in E} q_k prod_{k not in E} (1 - q_k) p(i | E)``.

**Deviation from the printed formula.** The paper prints the weight of an examined subset as
``prod_k q_k^{e_k}``, omitting the ``(1 - q_k)^{1 - e_k}`` factors; those weights do not sum to one
(with ``(1.0, 0.8, 0.6)`` they sum to 1 + 1 + 0.8 + 0.6 + 0.48 + … > 1) and can give "probabilities"
above one. We use the proper distribution over examined subsets stated above.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

__all__ = ["click_probabilities", "RRMActionModel", "single_item_preference"]


def _validate(h: Sequence[float] | np.ndarray, m: Sequence[float] | np.ndarray,
              examination: Sequence[float] | np.ndarray, outside: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    h = np.asarray(h, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)
    if h.ndim != 1 or m.shape != h.shape:
        raise ValueError(f"h and m must be 1-D arrays of equal length (one value per slate "
                         f"position); got shapes {h.shape} and {m.shape}")
    if h.size == 0:
        raise ValueError("the slate is empty: pass at least one document")
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(m))):
        raise ValueError("h and m must be finite")
    q = np.asarray(examination, dtype=np.float64)
    if q.ndim != 1 or q.size < h.size:
        raise ValueError(f"examination must give one probability per slate position; got "
                         f"{q.size} for a slate of {h.size} documents")
    if np.any(q < 0) or np.any(q > 1) or not np.all(np.isfinite(q)):
        raise ValueError(f"examination probabilities must lie in [0, 1]; got {q.tolist()}")
    if not np.isfinite(outside):
        raise ValueError(f"outside must be finite; got {outside}")
    return h, m, q[: h.size], float(outside)


def _choice_probabilities(h: np.ndarray, m: np.ndarray, outside: float) -> np.ndarray:
    """RRM choice probability of every document of an examined set (``|E| = 1`` augmented)."""
    if h.size == 1:
        u = -(h[0] + m[0])
        return np.array([np.exp(u) / (np.exp(outside) + np.exp(u))])
    regret = (np.maximum(h[:, None] - h[None, :], 0.0).sum(axis=1)
              + np.maximum(m[:, None] - m[None, :], 0.0).sum(axis=1))
    w = np.exp(-regret)
    return w / (np.exp(outside) + w.sum())


def click_probabilities(
    h: Sequence[float] | np.ndarray,
    m: Sequence[float] | np.ndarray,
    examination: Sequence[float] = (1.0, 0.8, 0.6),
    outside: float = -1.0,
) -> np.ndarray:
    """Click probability of each position of one slate under the examination-weighted RRM model.

    Parameters
    ----------
    h, m:
        Travelling time and price of the documents, in the order shown (position 1 first).
    examination:
        Examination probability of each position (at least as many as documents).
    outside:
        ``L``, the value of the outside option (no click).

    Returns
    -------
    numpy.ndarray
        ``p(c_i = 1)`` for each position ``i`` (see the module docstring for the formula, which
        weights examined subsets by a proper probability, unlike the printed paper formula).
    """
    hh, mm, q, outside = _validate(h, m, examination, outside)
    n = hh.size
    out = np.zeros(n)
    for mask in itertools.product((0, 1), repeat=n):
        e = np.array(mask, dtype=bool)
        if not e.any():
            continue
        weight = float(np.prod(np.where(e, q, 1.0 - q)))
        if weight == 0.0:
            continue
        out[e] += weight * _choice_probabilities(hh[e], mm[e], outside)
    return out


def single_item_preference(h, m, outside: float = -1.0) -> np.ndarray:
    """Initial preference score ``phi(d) = exp(U) / (exp(L) + exp(U))``, ``U = -(h + m)``.

    Vectorised over documents; equals :func:`click_probabilities` of a one-document slate whose
    only position is examined with probability one.
    """
    u = -(np.asarray(h, dtype=np.float64) + np.asarray(m, dtype=np.float64))
    return np.exp(u) / (np.exp(outside) + np.exp(u))


class RRMActionModel:
    """Action model ``M(u, d, D)`` of the synthetic slate scenario (user-independent).

    Documents are feature rows whose columns ``h_col`` and ``m_col`` hold time and price.
    ``click_probabilities(user, slate)`` returns the click probability of each slate row.
    """

    def __init__(self, examination: Sequence[float] = (1.0, 0.8, 0.6), outside: float = -1.0,
                 h_col: int = 0, m_col: int = 1) -> None:
        self.examination = tuple(float(x) for x in examination)
        self.outside = float(outside)
        self.h_col = h_col
        self.m_col = m_col

    def click_probabilities(self, user: np.ndarray, slate: np.ndarray) -> np.ndarray:
        slate = np.asarray(slate, dtype=np.float64)
        return click_probabilities(slate[:, self.h_col], slate[:, self.m_col],
                                   self.examination, self.outside)
