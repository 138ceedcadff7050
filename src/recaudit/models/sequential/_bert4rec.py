"""BERT4Rec (Sun, Liu, Wu, Pei, Lin, Ou, Jiang. *BERT4Rec: Sequential Recommendation with
Bidirectional Encoder Representations from Transformer.* CIKM 2019).

    h^0_j = Dropout(LN(E[v_j] + P_j))                    items + learnable positions (§3.5)
    per layer (post-LN, §3.3-3.4):  H = LN(H + Dropout(MH(H)));  H = LN(H + Dropout(PFFN(H)))
        MH: bidirectional multi-head attention over the non-padding positions
        PFFN(x) = GELU(x W1 + b1) W2 + b2, inner size 4d
    P(v | position j) = softmax(GELU(h_j W^P + b^P) E^T + b^O)      (eq. 7, shared E)

Training (Cloze task, §3.6): windows of a user's sequence (up to ``max_len`` items, cut from the
most recent backwards so no item is dropped) have each item replaced by ``[MASK]`` with
probability ``mask_prob`` (at least one per window); the loss is the cross-entropy of the
masked items. As in the paper, every window is also used once with only its last item masked,
which matches the prediction task: at ranking time ``[MASK]`` is appended after the query's most
recent ``max_len - 1`` items and its output position scores the catalogue. Masks are drawn on
the host from ``make_rng(seed, "bert4rec", "loss")`` (their number then fixes the loss's
shape, so training never waits for the device).

Defaults: 2 layers, 2 heads, dropout 0.1, ``mask_prob`` 0.2 (paper's ML-1M setting), lr 0.001;
d 128 and max_len 50 (Oh et al. 2022 §5). ``samples`` is fixed to windows (the Cloze task needs
whole windows); ``batch_order="temporal"`` orders windows by their last item's time.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from recaudit.models.sequential._nn import SeededDropout, SequenceNet, required
from recaudit.models._registry import register
from recaudit.models.sequential._samples import Batch, SequenceData
from recaudit.models.sequential._sasrec import _normal_rule
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import BERT4RecConfig

__all__ = ["BERT4Rec"]


class _Layer(nn.Module):
    def __init__(self, d: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d, device="meta")
        self.out = nn.Linear(d, d, device="meta")
        self.ln1 = nn.LayerNorm(d, device="meta")
        self.ff1 = nn.Linear(d, 4 * d, device="meta")
        self.ff2 = nn.Linear(4 * d, d, device="meta")
        self.ln2 = nn.LayerNorm(d, device="meta")
        self.drop_a, self.drop_o, self.drop_f = (SeededDropout(dropout) for _ in range(3))

    def forward(self, x: torch.Tensor, key_ok: torch.Tensor) -> torch.Tensor:
        b, length, d = x.shape
        h, dh = self.heads, d // self.heads
        q, k, v = (t.view(b, length, h, dh).transpose(1, 2) for t in self.qkv(x).split(d, -1))
        att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(~key_ok[:, None, None, :], float("-inf")).softmax(-1)
        att = self.drop_a(torch.nan_to_num(att))
        y = (att @ v).transpose(1, 2).reshape(b, length, d)
        x = self.ln1(x + self.drop_o(self.out(y)))
        return self.ln2(x + self.drop_f(self.ff2(nn.functional.gelu(self.ff1(x)))))


class _BERT4RecNet(SequenceNet):
    def __init__(self, n_items: int, cfg: BERT4RecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.mask_token = n_items + 1
        self.embedding = nn.Embedding(n_items + 2, d, padding_idx=0, device="meta")
        self.position = nn.Embedding(cfg.max_len, d, device="meta")
        self.ln = nn.LayerNorm(d, device="meta")
        self.drop = SeededDropout(cfg.dropout)
        self.layers = nn.ModuleList(_Layer(d, cfg.heads, cfg.dropout) for _ in range(cfg.layers))
        self.proj = nn.Linear(d, d, device="meta")
        self.out_bias = nn.Parameter(torch.empty(n_items, device="meta"))

    def forward(self, batch: Batch) -> torch.Tensor:
        items = batch.items
        pos = torch.arange(items.shape[1], device=items.device)
        x = self.drop(self.ln(self.embedding(items) + self.position(pos)[None]))
        key_ok = items > 0
        for layer in self.layers:
            x = layer(x, key_ok)
        return x

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(self.proj(h))

    def output(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.embedding.weight[1:self.mask_token], self.out_bias


def _append_mask(items: torch.Tensor, lengths: torch.Tensor, mask_token: int, max_len: int):
    """Keep the last ``max_len - 1`` real items of each row and append ``[MASK]``."""
    real = torch.where(items[:, 0] > 0, lengths, torch.zeros_like(lengths))
    shift = (real - (max_len - 1)).clamp(min=0)
    width = int(min(max_len, int(real.max()) + 1))
    cols = torch.arange(width, device=items.device)[None]
    src = (cols + shift[:, None]).clamp(max=items.shape[1] - 1)
    keep = real - shift
    out = torch.where(cols < keep[:, None], torch.gather(items, 1, src), torch.zeros_like(src))
    out[torch.arange(len(items), device=items.device), keep] = mask_token
    return out, keep


@register("bert4rec")
class BERT4Rec(SequentialRecommender):
    """BERT4Rec masked-item recommender (Sun et al., CIKM 2019); see the module docstring."""

    Config = BERT4RecConfig

    def _network(self, n_items: int) -> SequenceNet:
        return _BERT4RecNet(n_items, self.config)

    def _init_rule(self):
        return _normal_rule()

    def _make_data(self, train):
        # windows of max_len - 1 inputs + their last target = max_len items
        return SequenceData(train, self.config.max_len - 1, "window")

    def instance_scores(self, net, batch: Batch, rng: np.random.Generator
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """The Cloze loss over the masked positions of each window *and* of its copy with
        only the last item masked (the next-item prediction), and the scores of those copies:
        the instances are the next-item predictions, not the Cloze positions."""
        items, lengths = batch.items, batch.lengths
        b, width = items.shape[0], items.shape[1] + 1
        rows = torch.arange(b, device=items.device)
        full = torch.cat([items, torch.zeros_like(items[:, :1])], dim=1)
        full[rows, lengths] = required(batch.targets, "targets")[rows, lengths - 1] + 1
        # Cloze masks, drawn on the host (the counts fix the loss's shape: no device sync)
        host = batch.host_lengths if batch.host_lengths is not None \
            else batch.lengths.cpu().numpy()
        real = np.asarray(host) + 1
        masked = (rng.random((b, width)) < self.config.mask_prob) & \
            (np.arange(width)[None, :] < real[:, None])
        none = np.flatnonzero(~masked.any(1))
        masked[none, real[none] - 1] = True
        pos = np.concatenate([np.flatnonzero(masked),                       # Cloze copy
                              (b + np.arange(b)) * width + real - 1])       # last-item copy
        pos_t = torch.as_tensor(pos).to(items.device)
        both = torch.cat([full, full])
        inputs = both.clone()
        inputs.view(-1)[pos_t] = net.mask_token
        hidden = net(Batch(inputs, torch.cat([lengths + 1, lengths + 1]), None, batch.users))
        h = net.head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, pos_t))
        scores = self._logits(net, h)
        return nn.functional.cross_entropy(scores, both.view(-1)[pos_t] - 1), scores[-b:]

    def _query_hidden(self, net, batch: Batch) -> torch.Tensor:
        items, keep = _append_mask(batch.items, batch.lengths, net.mask_token,
                                   self.config.max_len)
        hidden = net(Batch(items, keep + 1, None, batch.users))
        return net.head(hidden[torch.arange(len(items), device=items.device), keep])
