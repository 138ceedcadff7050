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
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from recaudit.errors import ConfigError
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet, CausalSelfAttentionBlock, SeededDropout, init_normal
from recaudit.models._registry import register
from recaudit.models.sequential._samples import Batch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import SequentialConfig

__all__ = ["SASRec"]


@dataclass(frozen=True)
class SASRecConfig(SequentialConfig):
    """SASRec options (see :class:`SequentialConfig`). blocks: self-attention blocks (2);
    heads: attention heads (1); inner_dim: feed-forward inner size (None = embedding_dim, as
    the paper's point-wise Conv1d; RecBole uses 256 for d = 64)."""

    blocks: int = 2
    heads: int = 1
    inner_dim: int | None = None

    def validate(self) -> None:
        super().validate()
        for key in ("blocks", "heads"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"{type(self).__name__}.{key} = {v!r}: must be an integer >= 1")
        if self.inner_dim is not None and (not isinstance(self.inner_dim, int)
                                           or self.inner_dim < 1):
            raise ConfigError(f"{type(self).__name__}.inner_dim = {self.inner_dim!r}: must be "
                              "None or an integer >= 1")
        if self.embedding_dim % self.heads:
            raise ConfigError(f"{type(self).__name__}: embedding_dim {self.embedding_dim} must be "
                              f"divisible by heads {self.heads}")


class _SASRecNet(SequenceNet):
    def __init__(self, n_items: int, cfg: SASRecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.scale = math.sqrt(d)
        self.embedding = nn.Embedding(n_items + 1, d, padding_idx=0, device="meta")
        self.position = nn.Embedding(cfg.max_len, d, device="meta")
        self.drop = SeededDropout(cfg.dropout)
        self.blocks = nn.ModuleList(CausalSelfAttentionBlock(d, cfg.heads, cfg.dropout,
                                                             inner=cfg.inner_dim, device="meta")
                                    for _ in range(cfg.blocks))
        self.ln = nn.LayerNorm(d, device="meta")

    def forward(self, batch: Batch) -> torch.Tensor:
        items = batch.items
        length = items.shape[1]
        pos = torch.arange(length, device=items.device)
        x = self.embedding(items) * self.scale + self.position(pos)[None]
        x = self.drop(x) * (items > 0)[..., None]
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        for block in self.blocks:
            x = block(x, mask) * (items > 0)[..., None]
        return x

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.ln(h)

    @classmethod
    def stacked_forward(cls, nets, batches):
        items = torch.stack([b.items for b in batches])
        length = items.shape[-1]
        pos = torch.arange(length, device=items.device).expand(len(nets), length)
        x = (stk.embed([n.embedding for n in nets], items) * nets[0].scale
             + stk.embed([n.position for n in nets], pos)[:, None])
        real = (items > 0)[..., None]
        x = stk.dropout(x, [n.drop for n in nets]) * real
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        for blocks in zip(*(n.blocks for n in nets), strict=True):
            x = _stacked_blocks(blocks, x, mask) * real
        return x

    @classmethod
    def stacked_head(cls, nets, h):
        return stk.per_member(lambda net, hk: net.ln(hk), nets, h)

    def output(self) -> tuple[torch.Tensor, None]:
        return self.embedding.weight[1:], None


def _stacked_blocks(blocks: Sequence[CausalSelfAttentionBlock], x: torch.Tensor,
                    mask: torch.Tensor) -> torch.Tensor:
    """``blocks[k](x[k], mask)`` for ``x`` ``[K, B, L, D]`` in one batched pass
    (:mod:`recaudit.models.sequential._stack`; the same arithmetic per member)."""
    k, b, length, d = x.shape
    h = blocks[0].heads
    q_in = stk.per_member(lambda blk, xk: blk.ln_attn(xk), blocks, x)
    q = stk.linear(q_in, [blk.q for blk in blocks])
    kk, v = stk.linear(x, [blk.kv for blk in blocks]).split(d, dim=-1)
    q, kk, v = (t.reshape(k, b, length, h, d // h).transpose(2, 3) for t in (q, kk, v))
    att = (q @ kk.transpose(-1, -2)) / math.sqrt(d // h)
    att = att.masked_fill(~mask[:, None], float("-inf")).softmax(-1)
    att = stk.dropout(torch.nan_to_num(att), [blk.drop_attn for blk in blocks])
    y = (att @ v).transpose(2, 3).reshape(k, b, length, d)
    x = q_in + stk.dropout(stk.linear(y, [blk.out for blk in blocks]),
                           [blk.drop_out for blk in blocks])
    z = stk.per_member(lambda blk, xk: blk.ln_ffn(xk), blocks, x)
    z = stk.dropout(torch.relu(stk.linear(z, [blk.ff1 for blk in blocks])),
                    [blk.drop_ff1 for blk in blocks])
    z = stk.linear(z, [blk.ff2 for blk in blocks])
    return x + stk.dropout(z, [blk.drop_ff2 for blk in blocks])


def _normal_rule(std: float = 0.02):
    """Truncation-free N(0, 0.02) for embeddings and linear weights (BERT/SASRec practice)."""

    def rule(name, shape, g):
        if len(shape) == 2 and ("embedding" in name or "position" in name):
            w = init_normal(shape, std, g)
            if name.startswith("embedding"):
                w[0] = 0.0
            return w
        return None

    return rule


@register("sasrec")
class SASRec(SequentialRecommender):
    """SASRec next-item recommender (Kang & McAuley, ICDM 2018); see the module docstring."""

    Config = SASRecConfig

    def _network(self, n_items: int) -> SequenceNet:
        return _SASRecNet(n_items, self.config)

    def _batches_in_stack(self) -> bool:
        return True

    def _init_rule(self):
        return _normal_rule()
