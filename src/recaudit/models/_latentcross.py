"""LatentCross (Beutel, Covington, Jain, Xu, Li, Gatto, Chi. *Latent Cross: Making Use of
Context in Recurrent Recommender Systems.* WSDM 2018).

A GRU over the user's items in which the context ``c`` (here: time differences, as used for
LatentCross in Oh et al. 2022) enters multiplicatively, "as a latent cross" (§4.2-4.3, eq. 5):

    x_j = (1 + w^in(Δ_j)) ⊙ E[s_j]               Δ_j = t_j - t_{j-1} (0 for the first item)
    h_j = GRU(x_j, h_{j-1})
    o_j = (1 + w^out(τ_j)) ⊙ h_j                 τ_j = time from s_j to the predicted event
    score(i | s_1..s_j) = W[i] . ReLU(W_d o_j + b_d) + b[i]

Context embeddings ``w(Δ) = C[bucket(Δ)]`` with ``bucket(Δ) = min(B - 1, floor(log2(1 + Δ)))``
(log-scale buckets, ``B = time_buckets``; the paper embeds its context features and notes the
``1 +`` keeps the cross near the identity at initialisation, so ``C`` starts at 0 scale
``N(0, 0.01)``). At ranking time ``τ`` of the last position is the query's timestamp minus the
last context time (known when the recommendation is asked, like YouTube's "time since last
watch"); the target is never read.

Oh et al. (2022) use all interactions of a user for LatentCross; ``max_len`` (default 50)
truncates the context for cost only — set it larger for the full history. Defaults
``batch_order="temporal"`` (Oh et al. 2022 §6.1: mini-batches follow time) with
``samples="window"``: every position of a window predicts its next item, windows ordered by
their last target's time — on Wikipedia ~30x cheaper per epoch than ``samples="prefix"`` (one
sample per interaction with its own recomputed context, batches following the time of every
single interaction; recaudit 0.1's default, kept as an option).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from recaudit.errors import ConfigError
from recaudit.models._nn import SeededDropout, init_normal
from recaudit.models._registry import register
from recaudit.models._samples import Batch
from recaudit.models._sequential import SequentialConfig, SequentialRecommender

__all__ = ["LatentCross", "log_buckets"]


@dataclass(frozen=True)
class LatentCrossConfig(SequentialConfig):
    """LatentCross options (see :class:`SequentialConfig`). hidden_dim: GRU size (128);
    time_buckets: number of log2 time-difference buckets (32)."""

    hidden_dim: int = 128
    time_buckets: int = 32
    batch_order: str = "temporal"

    def validate(self) -> None:
        super().validate()
        for key in ("hidden_dim", "time_buckets"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"LatentCrossConfig.{key} = {v!r}: must be an integer >= 1")


def log_buckets(delta: torch.Tensor, n: int) -> torch.Tensor:
    """``min(n - 1, floor(log2(1 + max(Δ, 0))))`` as int64."""
    return torch.log2(1.0 + delta.clamp(min=0)).floor().clamp(max=n - 1).long()


class _LatentCrossNet(nn.Module):
    def __init__(self, n_items: int, cfg: LatentCrossConfig) -> None:
        super().__init__()
        d, h = cfg.embedding_dim, cfg.hidden_dim
        self.n_buckets = cfg.time_buckets
        self.embedding = nn.Embedding(n_items + 1, d, padding_idx=0, device="meta")
        self.ctx_in = nn.Embedding(cfg.time_buckets, d, device="meta")
        self.ctx_out = nn.Embedding(cfg.time_buckets, h, device="meta")
        self.drop = SeededDropout(cfg.dropout)
        self.gru = nn.GRU(d, h, batch_first=True, device="meta")
        self.dense = nn.Linear(h, d, device="meta")
        self.out = nn.Linear(d, n_items, device="meta")

    def forward(self, batch: Batch) -> torch.Tensor:
        x = self.embedding(batch.items) * (1.0 + self.ctx_in(log_buckets(batch.gaps,
                                                                         self.n_buckets)))
        h, _ = self.gru(self.drop(x))
        return h * (1.0 + self.ctx_out(log_buckets(batch.next_gaps, self.n_buckets)))

    def head(self, o: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.dense(self.drop(o)))

    def output(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.out.weight, self.out.bias


@register("latentcross")
class LatentCross(SequentialRecommender):
    """LatentCross GRU with time-difference context (Beutel et al., WSDM 2018)."""

    Config = LatentCrossConfig
    uses_time = True

    def _network(self, n_items: int) -> nn.Module:
        return _LatentCrossNet(n_items, self.config)

    def _init_rule(self):
        def rule(name, shape, g):
            if name in ("ctx_in.weight", "ctx_out.weight"):
                return init_normal(shape, 0.01, g)
            return None

        return rule
