"""The pieces of FINEST (Oh, Ustun, McAuley & Kumar 2024): reference lists, simulated
perturbations, training instances and the rank-preserving loss.

Training instance ``j``: the next-item prediction made right after a user's training
interaction ``j`` (a log row that has a later row of the same user). Its *reference list* is
what the reference model ranks there, from the up to ``max_len`` items ending at ``j`` —
exactly the list :meth:`~recaudit.models.SequentialRecommender.rank` would show that user
after ``j``. An instance is identified across logs by its interaction ``(user, item,
timestamp, occurrence)`` (:func:`match_rows`), so it keeps its reference when other rows are
deleted or inserted; an edited (replaced or inserted) interaction has none.

Rank-preserving loss (FINEST §4.2) of one instance with reference top-``K`` items
``r_1 .. r_K``, the next ``K`` (ranks ``K+1 .. 2K``) as competitors ``c_1 .. c_K``, scores
``s`` and margin ``m``::

    L_order = 1/(K-1) Σ_{i<K} max(0, m - (s(r_i) - s(r_{i+1})))    keep the top-K order
    L_top   = 1/K     Σ_{i≤K} max(0, m - (s(r_i) - s(c_i)))         keep the top-K in front
    L_rank  = L_order + L_top       (averaged over the regularised instances of a batch)

(the pairs of the authors' ``MarginRankingLoss(margin=0.1)``: consecutive reference items,
and the ``i``-th top item against the ``i``-th competitor).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from recaudit._torch import deterministic_torch
from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.models import BERT4Rec, top_k_from_scores
from recaudit.models.sequential import Batch, SequenceData, SequenceNet, SequentialRecommender
from recaudit.perturb import delete_rows, insert_after, neighbours, replace_items

__all__ = ["Reference", "reference_lists", "match_rows", "simulate", "instance_logits",
           "rank_preserving_loss", "EDITS"]

#: Simulated edits (FINEST's code: deletion, replacement by and insertion of the least
#: popular item, one kind drawn per fine-tuning epoch).
EDITS = ("delete", "replace", "insert")


@dataclass(frozen=True)
class Reference:
    """Reference lists of the instances of a log (one row per log row of the *anchor*).

    ``top [n_rows, K]``: the reference model's top-``K`` items after each row; ``comp
    [n_rows, K]``: its items at ranks ``K+1 .. 2K``; ``has [n_rows]``: whether the row is an
    instance (rows without a later row of their user have no list; their entries are -1).
    """

    top: np.ndarray
    comp: np.ndarray
    has: np.ndarray


def reference_lists(model: SequentialRecommender, anchor: Interactions, k: int,
                    chunk: int = 512) -> Reference:
    """Top-``2k`` items of the fitted ``model`` after every instance of ``anchor`` (evaluation
    mode, ties to the lower item code as in ``rank``)."""
    cfg = model.config
    if 2 * k > anchor.n_items:
        raise ConfigError(f"topk = {k} needs a catalogue of at least 2 * {k} items; this one "
                          f"has {anchor.n_items}", key="topk",
                          hint=f"set topk <= {anchor.n_items // 2}")
    _, nxt = neighbours(anchor)
    rows = np.flatnonzero(nxt >= 0)
    out = np.full((len(anchor), 2 * k), -1, dtype=np.int32)
    data = SequenceData(anchor, cfg.max_len, "prefix", pad_left=cfg.pad_left)
    net = model.network
    net.eval()
    with deterministic_torch(cfg.num_threads, model.device_), torch.no_grad():
        for lo in range(0, len(rows), chunk):
            sub = rows[lo:lo + chunk]
            batch = data.prefix_batch_for_rows(nxt[sub], model.device_, model.uses_time)
            scores = model.query_scores(net, batch).float().cpu().numpy()
            out[sub] = top_k_from_scores(scores, 2 * k).items
    return Reference(out[:, :k].copy(), out[:, k:].copy(), out[:, 0] >= 0)


def match_rows(a: Interactions, b: Interactions) -> np.ndarray:
    """For each row of ``b``, the row of ``a`` with the same ``(user, item, timestamp,
    occurrence)`` or -1 (occurrence: the how-manieth equal triple in log order)."""
    def frame(log: Interactions) -> pd.DataFrame:
        f = pd.DataFrame({"u": log.user, "i": log.item, "t": log.timestamp})
        f["o"] = f.groupby(["u", "i", "t"], sort=False).cumcount()
        return f

    fa = frame(a)
    fa["row"] = np.arange(len(a), dtype=np.int64)
    m = frame(b).merge(fa, on=["u", "i", "t", "o"], how="left", sort=False)
    return m["row"].fillna(-1).to_numpy(dtype=np.int64)


def simulate(train: Interactions, rng: np.random.Generator, ratio: float,
             edits: tuple[str, ...]) -> Interactions:
    """One simulated perturbation (FINEST §4.1): ``floor(ratio * len(train))`` distinct rows
    drawn uniformly, one edit kind drawn uniformly from ``edits`` and applied to all of them
    (replace / insert use the least popular item, :mod:`recaudit.perturb._edits`)."""
    n = int(ratio * len(train))
    kind = edits[int(rng.integers(len(edits)))]
    if n < 1:
        return train
    rows = rng.choice(len(train), size=n, replace=False)
    if kind == "delete":
        return delete_rows(train, rows, selector="finest")[0]
    if kind == "replace":
        return replace_items(train, rows, rng, strategy="unpopular", selector="finest")[0]
    return insert_after(train, rows, rng, strategy="unpopular", selector="finest")[0]


def instance_logits(model: SequentialRecommender, net: SequenceNet, data: SequenceData,
                    ids: np.ndarray, batch: Batch, rng: np.random.Generator
                    ) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """``(loss, logits [n, n_items], rows [n])`` of a training mini-batch: the model's own
    training loss and the scores of the batch's next-item predictions
    (:meth:`~recaudit.models.sequential.SequentialRecommender.instance_scores`), and the
    user-major position (in ``data``) of the last context item of each (-1: empty context).

    Causal models (``lstm``, ``gru4rec``, ``sasrec``, ``tisasrec``, ``latentcross``): every
    target position of the batch is an instance. BERT4Rec: the copy of each window with only
    its last item masked (its next-item prediction); the Cloze positions are not instances.
    """
    starts, lens = data.start[ids], data.length[ids]
    loss, logits = model.instance_scores(net, batch, rng)
    if isinstance(model, BERT4Rec):
        return loss, logits, starts + lens - 1
    if data.layout == "window":
        first = np.cumsum(lens) - lens
        pos = np.repeat(starts, lens) + np.arange(int(lens.sum())) - np.repeat(first, lens)
    else:
        pos = np.where(lens > 0, starts + lens - 1, -1)
    return loss, logits, pos


def rank_preserving_loss(scores: torch.Tensor, top: torch.Tensor, comp: torch.Tensor,
                         margin: float) -> torch.Tensor:
    """``L_order + L_top`` (module docstring) of ``scores [n, n_items]`` against reference
    items ``top [n, K]`` and competitors ``comp [n, K]``; 0 for ``n = 0``."""
    if len(scores) == 0:
        return scores.sum() * 0.0
    s_top = scores.gather(1, top)
    s_comp = scores.gather(1, comp)
    l_top = torch.relu(margin - (s_top - s_comp)).mean()
    if top.shape[1] < 2:
        return l_top
    return torch.relu(margin - (s_top[:, :-1] - s_top[:, 1:])).mean() + l_top
