"""TiSASRec (Li, Wang, McAuley. *Time Interval Aware Self-Attention for Sequential
Recommendation.* WSDM 2020).

Time intervals (§3.2): in a context ``s_1..s_n`` with times ``t_1..t_n``,
``r_ij = min(k, floor(|t_i - t_j| / r_min))`` where ``r_min`` is the smallest positive gap
between consecutive items of the context (1 when there is none); ``k`` = ``time_span``.

Time-interval aware self-attention (§3.3, eq. 5-6), per block, ``X`` the item representations:

    Q = LN(X) W_Q,  K = X W_K,  V = X W_V
    e_ij = Q_i (K_j + P^K_j + R^K[r_ij])^T / sqrt(d),      j <= i (causal)
    Z_i  = sum_j softmax_j(e_ij) (V_j + P^V_j + R^V[r_ij])
    X'   = LN(X) + Dropout(Z W_O);  X'' = X' + FFN(LN(X'))   (as SASRec's blocks)

with absolute position embeddings ``P^K, P^V`` (positions from the start of the context) and
interval embeddings ``R^K, R^V`` (``k + 1`` rows). Item input ``X^0 = Dropout(M[s] sqrt(d))``;
``score(i) = LN(X^B_n) . M[i]``. The interval terms are computed without materialising the
``[B, L, L, d]`` tensors: ``Q_i . R^K[r_ij]`` is a gather from ``Q R^K^T`` and
``sum_j a_ij R^V[r_ij]`` a scatter of the weights into interval buckets times ``R^V``.

Deviations: ``r_min`` is taken over the context window rather than the user's whole history
(the model sees only the window); the loss is full-softmax cross-entropy instead of the paper's
sampled binary cross-entropy. Defaults: 2 blocks, 1 head, dropout 0.2, ``time_span`` 256,
lr 0.001 (paper); d 128, max_len 50 (Oh et al. 2022 §5).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet, required
from recaudit.models._registry import register
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._config import TiSASRecConfig
from recaudit.models.sequential._attention._blocks import PreLNBlock, normal_rule
from recaudit.models.sequential._base import SequentialRecommender

__all__ = ["TiSASRec", "interval_buckets"]


def interval_buckets(times: torch.Tensor, lengths: torch.Tensor, k: int) -> torch.Tensor:
    """``[B, L, L]`` clipped, personalised interval indices ``r_ij`` (float64 times)."""
    b, length = times.shape
    valid = torch.arange(length, device=times.device)[None] < lengths[:, None]
    gaps = times[:, 1:] - times[:, :-1]
    pos = (gaps > 0) & valid[:, 1:]
    big = torch.full_like(gaps, float("inf"))
    r_min = torch.where(pos, gaps, big).amin(1) if length > 1 else torch.ones(b, dtype=times.dtype,
                                                                              device=times.device)
    r_min = torch.where(torch.isfinite(r_min), r_min, torch.ones_like(r_min))
    diff = (times[:, :, None] - times[:, None, :]).abs() / r_min[:, None, None]
    return diff.floor().clamp(max=k).long()


class _TimeAwareBlock(PreLNBlock):
    def __init__(self, k: int, d: int, heads: int, dropout: float, max_len: int, span: int,
                 inner: int | None = None) -> None:
        super().__init__()
        self._attention(k, d, heads)
        self.pos_k = stk.Embedding(k, max_len, d)
        self.pos_v = stk.Embedding(k, max_len, d)
        self.int_k = stk.Embedding(k, span + 1, d)
        self.int_v = stk.Embedding(k, span + 1, d)
        self._feed_forward(k, d, inner)
        self.drops = nn.ModuleList(stk.Dropout(dropout) for _ in range(5))

    def forward(self, x: torch.Tensor, mask: torch.Tensor, buckets: torch.Tensor,
                m: stk.Members) -> torch.Tensor:
        """``x`` ``[K, B, L, D]``, ``buckets`` ``[K, B, L, L]`` (:func:`interval_buckets`)."""
        kk_, b, length, d = x.shape
        h, dh = self.heads, d // self.heads
        drop_pk, drop_pv, drop_a, drop_o, drop_f = self.drops
        pos = torch.arange(length, device=x.device).expand(kk_, length)
        q_in = self.ln_attn(x, m)

        def split(t):
            return t.reshape(kk_, b, -1, h, dh).transpose(2, 3)

        q = split(self.q(q_in, m))
        kk, vv = self.kv(x, m).split(d, dim=-1)
        k = split(kk + drop_pk(self.pos_k(pos, m), m)[:, None])
        v = split(vv + drop_pv(self.pos_v(pos, m), m)[:, None])
        rk = m.take(self.int_k.weight).view(kk_, -1, h, dh).transpose(1, 2)  # [K, h, k+1, dh]
        rv = m.take(self.int_v.weight).view(kk_, -1, h, dh).transpose(1, 2)
        idx = buckets[:, :, None].expand(kk_, b, h, length, length)
        att = q @ k.transpose(-1, -2) + torch.gather(q @ rk.transpose(-1, -2)[:, None], -1, idx)
        att = (att / math.sqrt(dh)).masked_fill(~mask[:, None], float("-inf")).softmax(-1)
        att = drop_a(torch.nan_to_num(att), m)
        per_bucket = torch.zeros(kk_, b, h, length, rk.shape[2], dtype=att.dtype,
                                 device=att.device).scatter_add(-1, idx, att)
        z = att @ v + per_bucket @ rv[:, None]
        x = q_in + drop_o(self.out(z.transpose(2, 3).reshape(kk_, b, length, d), m), m)
        f = drop_f(torch.relu(self.ff1(self.ln_ffn(x, m), m)), m)
        return x + self.ff2(f, m)


class _TiSASRecNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: TiSASRecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.k = cfg.time_span
        self.scale = math.sqrt(d)
        self.embedding = stk.Embedding(k, n_items + 1, d, padding_idx=0)
        self.drop = stk.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(_TimeAwareBlock(k, d, cfg.heads, cfg.dropout, cfg.max_len,
                                                    cfg.time_span, cfg.inner_dim)
                                    for _ in range(cfg.blocks))
        self.ln = stk.LayerNorm(k, d)

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        items = batch.items
        k, b, length = items.shape
        real = (items > 0)[..., None]
        buckets = interval_buckets(required(batch.times, "times").view(k * b, length),
                                   batch.lengths.reshape(-1), self.k).view(k, b, length, length)
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        x = self.drop(self.embedding(items, m) * self.scale, m) * real
        for block in self.blocks:
            x = block(x, mask, buckets, m) * real
        return x

    def head(self, h: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return self.ln(h, m)

    def output(self, m: stk.Members) -> tuple[torch.Tensor, None]:
        return m.take(self.embedding.weight)[:, 1:], None


@register("tisasrec")
class TiSASRec(SequentialRecommender):
    """TiSASRec next-item recommender (Li et al., WSDM 2020); see the module docstring."""

    Config = TiSASRecConfig
    uses_time = True

    def _network(self, n_items: int, k: int = 1) -> SequenceNet:
        return _TiSASRecNet(k, n_items, self.config)

    def _init_rule(self):
        base = normal_rule()

        def rule(name, shape, g):
            if name.split(".")[-2] in ("pos_k", "pos_v", "int_k", "int_v"):
                from recaudit.models.sequential._nn import init_normal

                return init_normal(shape, 0.02, g)
            return base(name, shape, g)

        return rule
