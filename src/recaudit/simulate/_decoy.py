"""The synthetic decoy slate scenario (Zhu et al. 2023, §5.1): transportation choices under RRM.

Every group holds four documents ``d1 … d4`` (features ``h`` = time, ``m`` = price, both
observable; ``role`` and ``group`` hidden). The first half of the groups is drawn as

    h1 ~ 0.5 + U(0, 0.5),            m1 = 1 - h1
    h2 ~ h1 + U(0, 0.1),             m2 ~ m1 + U(0, 0.1)        (d2: a decoy of d1)
    h3 ~ max(1 - h1 - U(0, 0.1), 0), m3 ~ max(1 - m1 - U(0, 0.1), 0)   (d3: the favourite)
    h4 = (h1 + h3) / 2,              m4 = (m1 + m3) / 2

and the second half swaps ``h`` and ``m`` of the first half. Each group is one query; a single user
(no preference differences, as in the paper) issues a uniformly random query per session, and the
sampler recalls ``{d1, d2, d3}`` or ``{d1, d3, d4}`` with equal probability, in random order.

Oracles (§5.1.1): the **Decoy Oracle** shows ``D2 = (d1, d2, d3)`` for ``{d1, d2, d3}`` and
``D3 = (d3, d4, d1)`` or ``D4 = (d1, d4, d3)`` with equal probability for ``{d1, d3, d4}``. (The
paper's text writes "ranks d1, d2, d4 as D2", a typo for ``{d1, d2, d3}``; ``D3``/``D4`` are read
from Fig. 6's description: ``d1`` and ``d3`` at the same position around the medium ``d4``.)
The paper's Unbiased Oracle also shows ``D3``/``D4`` at random for the second list, although
``D4`` is not an ordering by initial preference; ours (:class:`UnbiasedSlateOracle`) always ranks
by initial preference, consistent with our unbiased rankings (Def. 4.4).
"""

from __future__ import annotations

import numpy as np

from recaudit.simulate._components import DocumentSet
from recaudit.simulate._slate import SlateScenario
from recaudit.simulate.rrm import RRMActionModel

__all__ = ["decoy_documents", "example_documents", "DecoyRecall", "DecoyOracle",
           "decoy_slate_scenario", "EXAMPLE_DOCUMENTS"]

#: §5.1.1's four documents (h, m).
EXAMPLE_DOCUMENTS = ((0.8, 0.2), (1.0, 0.4), (0.1, 0.8), (0.45, 0.5))

_COLUMNS = ("h", "m", "role", "group")
_OBSERVABLE = np.array([True, True, False, False])


def _document_set(hm: np.ndarray) -> DocumentSet:
    n_groups = hm.shape[0] // 4
    role = np.tile(np.arange(1, 5), n_groups)
    group = np.repeat(np.arange(n_groups), 4)
    feats = np.column_stack([hm, role, group]).astype(np.float64)
    queries = tuple(np.arange(4 * g, 4 * g + 4) for g in range(n_groups))
    return DocumentSet(feats, queries, _OBSERVABLE, _COLUMNS)


def example_documents() -> DocumentSet:
    """The four documents of §5.1.1 as one group (ids 0..3 = d1..d4)."""
    return _document_set(np.array(EXAMPLE_DOCUMENTS, dtype=np.float64))


def decoy_documents(rng: np.random.Generator, n_groups: int = 100) -> DocumentSet:
    """The §5.1.1 document set: ``n_groups`` groups (even), the second half with h and m swapped."""
    if n_groups < 2 or n_groups % 2:
        raise ValueError(f"n_groups must be a positive even number; got {n_groups}")
    half = n_groups // 2
    u = rng.uniform(0.0, 1.0, size=(half, 5))
    h1 = 0.5 + 0.5 * u[:, 0]
    m1 = 1.0 - h1
    h2, m2 = h1 + 0.1 * u[:, 1], m1 + 0.1 * u[:, 2]
    h3 = np.maximum(1.0 - h1 - 0.1 * u[:, 3], 0.0)
    m3 = np.maximum(1.0 - m1 - 0.1 * u[:, 4], 0.0)
    h4, m4 = (h1 + h3) / 2, (m1 + m3) / 2
    first = np.stack([np.column_stack([h, m]) for h, m in
                      ((h1, m1), (h2, m2), (h3, m3), (h4, m4))], axis=1)  # [half, 4, 2]
    groups = np.concatenate([first, first[:, :, ::-1]], axis=0)
    return _document_set(groups.reshape(-1, 2))


class DecoyRecall:
    """Recalls ``{d1, d2, d3}`` or ``{d1, d3, d4}`` of a group with equal probability, shuffled."""

    def recall(self, docs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if docs.size != 4:
            raise ValueError(f"a decoy group has 4 documents; got {docs.size}")
        chosen = docs[[0, 1, 2]] if rng.random() < 0.5 else docs[[0, 2, 3]]
        return rng.permutation(chosen)


class DecoyOracle:
    """The Decoy Oracle of §5.1.1 (see the module docstring)."""

    name = "Decoy Oracle"

    def rank(self, scenario, users, queries, candidates, rng):
        role = scenario.documents.features[:, 2]
        out = np.empty((len(users), 3), dtype=np.int64)
        for t, c in enumerate(candidates):
            by_role = {int(role[d]): int(d) for d in c}
            if set(by_role) == {1, 2, 3}:
                out[t] = [by_role[1], by_role[2], by_role[3]]
            elif set(by_role) == {1, 3, 4}:
                if rng.random() < 0.5:
                    out[t] = [by_role[3], by_role[4], by_role[1]]
                else:
                    out[t] = [by_role[1], by_role[4], by_role[3]]
            else:
                raise ValueError(f"the Decoy Oracle needs a recall of roles {{1,2,3}} or "
                                 f"{{1,3,4}}; got {sorted(by_role)}")
        return out


def decoy_slate_scenario(rng: np.random.Generator, n_groups: int = 100,
                         examination=(1.0, 0.8, 0.6), outside: float = -1.0) -> SlateScenario:
    """The §5.1 scenario: RRM action model, slate size 3, one user, favourite set ``K = 1``."""
    docs = decoy_documents(rng, n_groups)
    n = len(docs.queries)
    return SlateScenario(
        name="decoy-slate", documents=docs, users=np.ones((1, 1)),
        user_queries=(np.arange(n),), action_model=RRMActionModel(examination, outside),
        sampler=DecoyRecall(), slate_size=3, favourite_k=1)
