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
from dataclasses import dataclass

import torch
from torch import nn

from recaudit.errors import ConfigError
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SeededDropout, SequenceNet, required
from recaudit.models._registry import register
from recaudit.models.sequential._samples import Batch
from recaudit.models.sequential._sasrec import SASRecConfig, _normal_rule
from recaudit.models.sequential._base import SequentialRecommender

__all__ = ["TiSASRec", "interval_buckets"]


@dataclass(frozen=True)
class TiSASRecConfig(SASRecConfig):
    """TiSASRec options (see :class:`SASRecConfig`). time_span: interval clip ``k`` (256)."""

    time_span: int = 256

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.time_span, int) or isinstance(self.time_span, bool) \
                or self.time_span < 1:
            raise ConfigError(f"TiSASRecConfig.time_span = {self.time_span!r}: must be an "
                              "integer >= 1")


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


class _TimeAwareBlock(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float, max_len: int, k: int,
                 inner: int | None = None) -> None:
        super().__init__()
        self.heads = heads
        self.ln_attn = nn.LayerNorm(d, device="meta")
        self.q = nn.Linear(d, d, device="meta")
        self.kv = nn.Linear(d, 2 * d, device="meta")
        self.out = nn.Linear(d, d, device="meta")
        self.pos_k = nn.Embedding(max_len, d, device="meta")
        self.pos_v = nn.Embedding(max_len, d, device="meta")
        self.int_k = nn.Embedding(k + 1, d, device="meta")
        self.int_v = nn.Embedding(k + 1, d, device="meta")
        self.ln_ffn = nn.LayerNorm(d, device="meta")
        self.ff1 = nn.Linear(d, inner or d, device="meta")
        self.ff2 = nn.Linear(inner or d, d, device="meta")
        self.drops = nn.ModuleList(SeededDropout(dropout) for _ in range(5))

    @staticmethod
    def stacked(blocks, x: torch.Tensor, mask: torch.Tensor, buckets: torch.Tensor
                ) -> torch.Tensor:
        """``blocks[k](x[k], mask, buckets[k])`` for ``x`` ``[K, B, L, D]`` in one batched
        pass (:mod:`recaudit.models.sequential._stack`; the same arithmetic per member)."""
        kk_, b, length, d = x.shape
        h, dh = blocks[0].heads, d // blocks[0].heads
        drops = list(zip(*(blk.drops for blk in blocks), strict=True))
        pos = torch.arange(length, device=x.device).expand(kk_, length)
        q_in = stk.per_member(lambda blk, xk: blk.ln_attn(xk), blocks, x)

        def split(t):
            return t.reshape(kk_, b, -1, h, dh).transpose(2, 3)

        q = split(stk.linear(q_in, [blk.q for blk in blocks]))
        kk, vv = stk.linear(x, [blk.kv for blk in blocks]).split(d, dim=-1)
        k = split(kk + stk.dropout(stk.embed([blk.pos_k for blk in blocks], pos), drops[0])[:, None])
        v = split(vv + stk.dropout(stk.embed([blk.pos_v for blk in blocks], pos), drops[1])[:, None])
        rk = stk.stack([blk.int_k.weight for blk in blocks]).view(kk_, -1, h, dh).transpose(1, 2)
        rv = stk.stack([blk.int_v.weight for blk in blocks]).view(kk_, -1, h, dh).transpose(1, 2)
        idx = buckets[:, :, None].expand(kk_, b, h, length, length)
        att = q @ k.transpose(-1, -2) + torch.gather(q @ rk.transpose(-1, -2)[:, None], -1, idx)
        att = (att / math.sqrt(dh)).masked_fill(~mask[:, None], float("-inf")).softmax(-1)
        att = stk.dropout(torch.nan_to_num(att), drops[2])
        per_bucket = torch.zeros(kk_, b, h, length, rk.shape[2], dtype=att.dtype,
                                 device=att.device).scatter_add(-1, idx, att)
        z = att @ v + per_bucket @ rv[:, None]
        x = q_in + stk.dropout(stk.linear(z.transpose(2, 3).reshape(kk_, b, length, d),
                                          [blk.out for blk in blocks]), drops[3])
        f = stk.per_member(lambda blk, xk: blk.ln_ffn(xk), blocks, x)
        f = stk.dropout(torch.relu(stk.linear(f, [blk.ff1 for blk in blocks])), drops[4])
        return x + stk.linear(f, [blk.ff2 for blk in blocks])

    def forward(self, x: torch.Tensor, mask: torch.Tensor, buckets: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        h, dh = self.heads, d // self.heads
        drop_pk, drop_pv, drop_a, drop_o, drop_f = self.drops
        pos = torch.arange(length, device=x.device)
        q_in = self.ln_attn(x)
        split = lambda t: t.view(b, -1, h, dh).transpose(1, 2)  # noqa: E731
        q = split(self.q(q_in))
        kk, vv = self.kv(x).split(d, dim=-1)
        k = split(kk + drop_pk(self.pos_k(pos))[None])
        v = split(vv + drop_pv(self.pos_v(pos))[None])
        rk = self.int_k.weight.view(-1, h, dh).transpose(0, 1)     # [h, k+1, dh]
        rv = self.int_v.weight.view(-1, h, dh).transpose(0, 1)
        idx = buckets[:, None].expand(b, h, length, length)
        att = q @ k.transpose(-1, -2) + torch.gather(q @ rk.transpose(-1, -2)[None], -1, idx)
        att = (att / math.sqrt(dh)).masked_fill(~mask[:, None], float("-inf")).softmax(-1)
        att = drop_a(torch.nan_to_num(att))
        per_bucket = torch.zeros(b, h, length, rk.shape[1], dtype=att.dtype, device=att.device)
        per_bucket = per_bucket.scatter_add(-1, idx, att)
        z = att @ v + per_bucket @ rv[None]
        x = q_in + drop_o(self.out(z.transpose(1, 2).reshape(b, length, d)))
        f = self.ff2(drop_f(torch.relu(self.ff1(self.ln_ffn(x)))))
        return x + f


class _TiSASRecNet(SequenceNet):
    def __init__(self, n_items: int, cfg: TiSASRecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.k = cfg.time_span
        self.scale = math.sqrt(d)
        self.embedding = nn.Embedding(n_items + 1, d, padding_idx=0, device="meta")
        self.drop = SeededDropout(cfg.dropout)
        self.blocks = nn.ModuleList(_TimeAwareBlock(d, cfg.heads, cfg.dropout, cfg.max_len,
                                                    cfg.time_span, cfg.inner_dim)
                                    for _ in range(cfg.blocks))
        self.ln = nn.LayerNorm(d, device="meta")

    def forward(self, batch: Batch) -> torch.Tensor:
        items = batch.items
        length = items.shape[1]
        real = (items > 0)[..., None]
        buckets = interval_buckets(required(batch.times, "times"), batch.lengths, self.k)
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        x = self.drop(self.embedding(items) * self.scale) * real
        for block in self.blocks:
            x = block(x, mask, buckets) * real
        return x

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.ln(h)

    @classmethod
    def stacked_forward(cls, nets, batches):
        items = torch.stack([b.items for b in batches])
        k, b, length = items.shape
        real = (items > 0)[..., None]
        times = torch.stack([required(bt.times, "times") for bt in batches])
        buckets = interval_buckets(times.view(k * b, length),
                                   torch.stack([bt.lengths for bt in batches]).view(-1),
                                   nets[0].k).view(k, b, length, length)
        mask = torch.ones(length, length, dtype=torch.bool, device=items.device).tril()[None]
        x = stk.dropout(stk.embed([n.embedding for n in nets], items) * nets[0].scale,
                        [n.drop for n in nets]) * real
        for blocks in zip(*(n.blocks for n in nets), strict=True):
            x = _TimeAwareBlock.stacked(blocks, x, mask, buckets) * real
        return x

    @classmethod
    def stacked_head(cls, nets, h):
        return stk.per_member(lambda net, hk: net.ln(hk), nets, h)

    def output(self) -> tuple[torch.Tensor, None]:
        return self.embedding.weight[1:], None


@register("tisasrec")
class TiSASRec(SequentialRecommender):
    """TiSASRec next-item recommender (Li et al., WSDM 2020); see the module docstring."""

    Config = TiSASRecConfig
    uses_time = True

    def _network(self, n_items: int) -> SequenceNet:
        return _TiSASRecNet(n_items, self.config)

    def _batches_in_stack(self) -> bool:
        return True

    def _init_rule(self):
        base = _normal_rule()

        def rule(name, shape, g):
            if name.split(".")[-2] in ("pos_k", "pos_v", "int_k", "int_v"):
                from recaudit.models.sequential._nn import init_normal

                return init_normal(shape, 0.02, g)
            return base(name, shape, g)

        return rule
