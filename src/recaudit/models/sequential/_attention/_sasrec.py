"""SASRec (Kang & McAuley. *Self-Attentive Sequential Recommendation.* ICDM 2018).

    E_j = M[s_j] * sqrt(d) + P_j            item embedding (scaled as in the authors' code) +
                                            learnable absolute position (§III-A); Dropout
    for b = 1..B:  Q = LN(E);  E = Q + Dropout(SA(Q, E, E));  E = E + FFN(LN(E))   (§III-B,C,E)
        SA = softmax(Q K^T / sqrt(d/h)) V with a causal mask (j attends to i <= j)
        FFN(x) = W2 Dropout(ReLU(W1 x + b1)) + b2
    F_j = LN(E_j);  score(i | s_1..s_j) = F_j . M[i]          shared item embedding (§III-D)

Positions count from the start of the (left-aligned) context window. Deviation: the paper's
binary cross-entropy with one sampled negative per position is replaced by the full-softmax
cross-entropy (as RecBole's default), so the rank lists do not depend on a negative sampler.
Paper defaults kept: 2 blocks, 1 head, dropout 0.2, lr 0.001, batch 128; d = 128 and
max_len = 50 follow Oh et al. 2022 §5. Default layout ``samples="window"`` is the paper's training
scheme (every position of a window predicts its next item).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._attention._blocks import PreLNBlock, normal_rule
from recaudit.models.sequential._nn import SequenceNet
from recaudit.models._registry import register
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import SASRecConfig

__all__ = ["SASRec"]


class _Block(PreLNBlock):
    """Pre-LN transformer block (SASRec, Kang & McAuley 2018, §III-B/C) of ``K`` members.

    ``Q = LN(x)``; ``x' = Q + MHA(Q, x, x)`` with a causal mask (position ``i`` sees
    ``j <= i``); ``y = x' + FFN(LN(x'))``, ``FFN(z) = W2 ReLU(W1 z + b1) + b2``; dropout after
    the attention weights, the attention output and each FFN layer.
    """

    def __init__(self, k: int, dim: int, heads: int, dropout: float,
                 inner: int | None = None) -> None:
        super().__init__()
        self._attention(k, dim, heads)
        self._feed_forward(k, dim, inner)
        self.drop_attn = stk.Dropout(dropout)
        self.drop_out = stk.Dropout(dropout)
        self.drop_ff1 = stk.Dropout(dropout)
        self.drop_ff2 = stk.Dropout(dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor, m: stk.Members) -> torch.Tensor:
        """``x`` [K, B, L, D]; ``mask`` [1, L, L] bool, True where attention is allowed."""
        k, b, length, d = x.shape
        h = self.heads
        q_in = self.ln_attn(x, m)
        q = self.q(q_in, m)
        kk, v = self.kv(x, m).split(d, dim=-1)
        q, kk, v = (t.reshape(k, b, length, h, d // h).transpose(2, 3) for t in (q, kk, v))
        att = (q @ kk.transpose(-1, -2)) / math.sqrt(d // h)
        att = att.masked_fill(~mask[:, None], float("-inf")).softmax(-1)
        att = self.drop_attn(torch.nan_to_num(att), m)  # rows with no allowed key: padding
        y = (att @ v).transpose(2, 3).reshape(k, b, length, d)
        x = q_in + self.drop_out(self.out(y, m), m)
        z = self.drop_ff1(torch.relu(self.ff1(self.ln_ffn(x, m), m)), m)
        return x + self.drop_ff2(self.ff2(z, m), m)


class _SASRecNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: SASRecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.scale = math.sqrt(d)
        self.embedding = stk.Embedding(k, n_items + 1, d, padding_idx=0)
        self.position = stk.Embedding(k, cfg.max_len, d)
        self.drop = stk.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(_Block(k, d, cfg.heads, cfg.dropout, inner=cfg.inner_dim)
                                    for _ in range(cfg.blocks))
        self.ln = stk.LayerNorm(k, d)

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        items = batch.items
        k, _, length = items.shape
        pos = torch.arange(length, device=items.device).expand(k, length)
        x = self.embedding(items, m) * self.scale + self.position(pos, m)[:, None]
        real = (items > 0)[..., None]
        x = self.drop(x, m) * real
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        for block in self.blocks:
            x = block(x, mask, m) * real
        return x

    def head(self, h: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return self.ln(h, m)

    def output(self, m: stk.Members) -> tuple[torch.Tensor, None]:
        return m.take(self.embedding.weight)[:, 1:], None


@register("sasrec")
class SASRec(SequentialRecommender):
    """SASRec next-item recommender (Kang & McAuley, ICDM 2018); see the module docstring."""

    Config = SASRecConfig

    def _network(self, n_items: int, k: int = 1) -> SequenceNet:
        return _SASRecNet(k, n_items, self.config)

    def _init_rule(self):
        return normal_rule()
