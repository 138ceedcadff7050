"""Rev.Adv. selector (Oh et al. 2022 section 7.1.2, after Tang, Wen & Wang, RecSys 2020).

Tang et al. craft fake-user profiles by a bi-level optimisation: the inner problem trains a
surrogate recommender on the real data plus the fake user, the outer problem changes the fake
user's (relaxed, continuous) profile to maximise an adversarial objective, differentiating
through the unrolled inner training. Oh et al. 2022 adapts it to one-interaction perturbations: find
the real user most similar to the fake user and perturb that user's earliest (``rev-adv-
earliest``) or a random (``rev-adv-random``) interaction.

What we do, precisely:

- surrogate: matrix factorisation ``P = U V^T`` (dimension ``dim``) on the binary user-item
  matrix ``R`` of at most ``max_users`` users (drawn from ``rng``) and the ``max_items`` most
  interacted items (ties to the lower code; bounds the cost), squared loss with L2
  ``reg``, trained by ``inner_steps`` full-batch gradient steps from a seeded initialisation;
- fake user: profile ``x = sigmoid(theta)`` over the items, appended as an extra row of ``R``;
- outer objective (untargeted, because Oh et al. 2022 seeks instability, not promotion of an item):
  maximise ``||P_x - P_0||^2`` over the real users, the change of the surrogate's predictions
  caused by the fake user (``P_0``: the same unrolled training without it), by ``outer_steps``
  Adam steps on ``theta`` through the unrolled inner loop;
- projection: the fake profile is the ``m`` items with the largest ``x`` (ties to the lower
  code), ``m`` = median number of distinct items of the surrogate's users, at most half the
  surrogate's items and at least 1;
- mapping: the ``k`` real users (all users of the log) with the highest cosine similarity
  between their item set and the fake profile (ties to the lower user code); one interaction
  each: the user's first, or one drawn uniformly. Scores are the similarities.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from recaudit.data import Interactions

__all__ = ["craft_fake_user", "select_rev_adv"]


def craft_fake_user(log: Interactions, rng: np.random.Generator, *, dim: int = 16,
                    max_users: int = 512, max_items: int = 2000, inner_steps: int = 10,
                    outer_steps: int = 20,
                    inner_lr: float = 0.5, outer_lr: float = 0.3, reg: float = 0.01
                    ) -> np.ndarray:
    """Item codes of the crafted fake user's profile (sorted)."""
    import torch

    users = np.flatnonzero(log.user_counts() > 0)
    if len(users) == 0:
        raise ValueError("the log has no interactions")
    if len(users) > max_users:
        users = np.sort(rng.choice(users, size=max_users, replace=False))
    counts = log.item_counts()
    items = np.lexsort((np.arange(log.n_items), -counts))[:max_items]
    items = np.sort(items[counts[items] > 0])
    n_items = len(items)
    local = np.full(log.n_users, -1, dtype=np.int64)
    local[users] = np.arange(len(users))
    item_local = np.full(log.n_items, -1, dtype=np.int64)
    item_local[items] = np.arange(n_items)
    sel = (local[log.user] >= 0) & (item_local[log.item] >= 0)
    dense = np.zeros((len(users), n_items), dtype=np.float32)
    dense[local[log.user[sel]], item_local[log.item[sel]]] = 1.0
    distinct = (dense > 0).sum(axis=1)
    m = int(max(1, min(np.median(distinct), n_items // 2)))
    seed = int(rng.integers(2**62))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        gen = torch.Generator().manual_seed(seed)
        r = torch.from_numpy(dense)
        u0 = torch.randn(len(users) + 1, dim, generator=gen) * 0.1
        v0 = torch.randn(n_items, dim, generator=gen) * 0.1
        theta = (torch.randn(n_items, generator=gen) * 0.1).requires_grad_(True)

        def train(rows: torch.Tensor, n_rows: int) -> torch.Tensor:
            u, v = u0[:n_rows].clone(), v0.clone()
            u.requires_grad_(True)
            v.requires_grad_(True)
            for _ in range(inner_steps):
                loss = ((u @ v.T - rows) ** 2).sum() / rows.numel() + reg * (
                    (u ** 2).sum() + (v ** 2).sum()) / rows.shape[0]
                gu, gv = torch.autograd.grad(loss, (u, v), create_graph=True)
                u, v = u - inner_lr * rows.shape[0] * gu, v - inner_lr * rows.shape[0] * gv
            return (u[: len(users)] @ v.T)

        p0 = train(r, len(users)).detach()
        opt = torch.optim.Adam([theta], lr=outer_lr)
        for _ in range(outer_steps):
            x = torch.sigmoid(theta)
            p = train(torch.cat([r, x[None, :]], dim=0), len(users) + 1)
            adv = -((p - p0) ** 2).sum()
            opt.zero_grad()
            adv.backward()
            opt.step()
        weights = torch.sigmoid(theta).detach().numpy()
    finally:
        torch.set_num_threads(threads)
    order = np.lexsort((np.arange(n_items), -weights))
    return np.sort(items[order[:m]]).astype(np.int64)


def select_rev_adv(log: Interactions, k: int, rng: np.random.Generator, *,
                   variant: str = "earliest", fake: np.ndarray | None = None,
                   **surrogate: Any) -> tuple[np.ndarray, np.ndarray]:
    """``k`` rows: one (earliest or random) interaction of each of the ``k`` users most similar
    to a crafted fake user (or to the given ``fake`` profile, item codes); scores are the
    cosine similarities."""
    from recaudit.perturb._selectors import _check_k

    if variant not in ("earliest", "random"):
        raise ValueError(f"variant must be 'earliest' or 'random', got {variant!r}")
    indptr, rows = log.user_sequences()
    active = np.flatnonzero(np.diff(indptr) > 0)
    k = _check_k(k, len(active), "users")
    fake = craft_fake_user(log, rng, **surrogate) if fake is None \
        else np.unique(np.asarray(fake, dtype=np.int64))
    in_fake = np.zeros(log.n_items, dtype=bool)
    in_fake[fake] = True
    pairs = np.unique(np.stack([log.user.astype(np.int64), log.item.astype(np.int64)]), axis=1)
    n_distinct = np.bincount(pairs[0], minlength=log.n_users)
    overlap = np.bincount(pairs[0], weights=in_fake[pairs[1]], minlength=log.n_users)
    sim = np.zeros(log.n_users)
    ok = n_distinct > 0
    sim[ok] = overlap[ok] / np.sqrt(n_distinct[ok] * len(fake))
    cand = active[np.lexsort((active, -sim[active]))[:k]]
    picked = []
    for u in cand.tolist():
        lo, hi = indptr[u], indptr[u + 1]
        pos = lo if variant == "earliest" else lo + int(rng.integers(hi - lo))
        picked.append(rows[pos])
    return np.asarray(picked, dtype=np.int64), sim[cand]
