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
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet, required
from recaudit.models._registry import register
from recaudit.models.sequential._samples import Batch, SequenceData, StackBatch, to_device
from recaudit.models.sequential._stack import padded
from recaudit.models.sequential._attention._blocks import normal_rule
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import BERT4RecConfig

__all__ = ["BERT4Rec"]


class _Layer(nn.Module):
    def __init__(self, k: int, d: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = stk.Linear(k, d, 3 * d)
        self.out = stk.Linear(k, d, d)
        self.ln1 = stk.LayerNorm(k, d)
        self.ff1 = stk.Linear(k, d, 4 * d)
        self.ff2 = stk.Linear(k, 4 * d, d)
        self.ln2 = stk.LayerNorm(k, d)
        self.drop_a, self.drop_o, self.drop_f = (stk.Dropout(dropout) for _ in range(3))

    def forward(self, x: torch.Tensor, key_ok: torch.Tensor, m: stk.Members) -> torch.Tensor:
        k, b, length, d = x.shape
        h, dh = self.heads, d // self.heads
        q, kk, v = (t.reshape(k, b, length, h, dh).transpose(2, 3)
                    for t in self.qkv(x, m).split(d, -1))
        att = (q @ kk.transpose(-1, -2)) / math.sqrt(dh)
        att = att.masked_fill(~key_ok[:, :, None, None, :], float("-inf")).softmax(-1)
        att = self.drop_a(torch.nan_to_num(att), m)
        y = (att @ v).transpose(2, 3).reshape(k, b, length, d)
        x = self.ln1(x + self.drop_o(self.out(y, m), m), m)
        return self.ln2(x + self.drop_f(self.ff2(nn.functional.gelu(self.ff1(x, m)), m), m), m)


class _BERT4RecNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: BERT4RecConfig) -> None:
        super().__init__()
        d = cfg.embedding_dim
        self.mask_token = n_items + 1
        self.embedding = stk.Embedding(k, n_items + 2, d, padding_idx=0)
        self.position = stk.Embedding(k, cfg.max_len, d)
        self.ln = stk.LayerNorm(k, d)
        self.drop = stk.Dropout(cfg.dropout)
        self.layers = nn.ModuleList(_Layer(k, d, cfg.heads, cfg.dropout)
                                    for _ in range(cfg.layers))
        self.proj = stk.Linear(k, d, d)
        self.out_bias = nn.Parameter(torch.empty(k, n_items, device="meta"))

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        items = batch.items
        k, _, length = items.shape
        pos = torch.arange(length, device=items.device).expand(k, length)
        x = self.drop(self.ln(self.embedding(items, m) + self.position(pos, m)[:, None], m), m)
        key_ok = items > 0
        for layer in self.layers:
            x = layer(x, key_ok, m)
        return x

    def head(self, h: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return nn.functional.gelu(self.proj(h, m))

    def output(self, m: stk.Members) -> tuple[torch.Tensor, torch.Tensor]:
        return m.take(self.embedding.weight)[:, 1:self.mask_token], m.take(self.out_bias)


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

    def _network(self, n_items: int, k: int = 1) -> SequenceNet:
        return _BERT4RecNet(k, n_items, self.config)

    def _init_rule(self):
        return normal_rule()

    def _make_data(self, train):
        # windows of max_len - 1 inputs + their last target = max_len items
        return SequenceData(train, self.config.max_len - 1, "window")

    def instance_scores(self, net, batch: Batch, rng: np.random.Generator
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """The Cloze loss over the masked positions of each window *and* of its copy with
        only the last item masked (the next-item prediction), and the scores of those copies:
        the instances are the next-item predictions, not the Cloze positions."""
        losses, scores, counts = self._cloze_pass(net, StackBatch.of([batch]),
                                                  stk.Members.of(net), [rng])
        n = counts[0]
        return losses[0], scores[0][n - len(batch):n]

    def _objectives(self, net, batch: StackBatch, m: stk.Members,
                    rngs: Sequence[np.random.Generator]) -> torch.Tensor:
        return self._cloze_pass(net, batch, m, rngs)[0]

    def _cloze_pass(self, net, batch: StackBatch, m: stk.Members,
                    rngs: Sequence[np.random.Generator]
                    ) -> tuple[torch.Tensor, list[torch.Tensor], list[int]]:
        """Each member's Cloze loss ``[K]``, scores ``[R, n_items]`` and number of masked
        positions: the members' inputs, of one shape, run as one pass; their masked positions
        (each member's own count, padded, :func:`.._stack.padded`) are scored in one batched
        pass per padded count. The masks are drawn on the host, member by member (their
        numbers fix the loss's shape: no device sync); everything else is one operation for
        all members."""
        items = batch.items
        k, b, w = items.shape
        size = 2 * b * (w + 1)                        # a member's two copies, flat
        full = self._windows(batch)
        both = torch.cat([full, full], 1)             # [K, 2B, W + 1]: Cloze and last-item
        hosts = batch.host_lengths if batch.host_lengths is not None \
            else list(batch.lengths.cpu().numpy())
        positions = [self._cloze(np.asarray(hosts[j]), w + 1, rng) for j, rng in enumerate(rngs)]
        flat = np.concatenate([pos + j * size for j, pos in enumerate(positions)])
        inputs = both.clone()
        inputs.view(-1)[to_device(flat, items.device)] = net.mask_token
        lengths = batch.lengths + 1
        trunk = net(StackBatch(inputs, torch.cat([lengths, lengths], 1), None, batch.users), m)
        groups: dict[int, list[int]] = {}
        for j, pos in enumerate(positions):
            groups.setdefault(padded(len(pos)), []).append(j)
        parts: list[tuple[list[int], torch.Tensor, torch.Tensor]] = []
        for rows, idx in groups.items():
            whole = len(idx) == len(rngs)
            part = trunk if whole else trunk.index_select(0, stk.index_tensor(idx, trunk.device))
            sel = np.zeros((len(idx), rows), dtype=np.int64)      # padding: position 0 ...
            real = np.zeros((len(idx), rows), dtype=bool)
            for r, j in enumerate(idx):
                sel[r, :len(positions[j])] = positions[j]
                real[r, :len(positions[j])] = True
            at = to_device(sel + (np.asarray(idx) * size)[:, None], items.device)
            tgt = torch.where(to_device(real, items.device), both.view(-1)[at] - 1, -100)
            parts.append((idx, *self._scored(net, part, to_device(sel, items.device), tgt,
                                             m if whole else m.sub(idx))))  # ... target ignored
        counts = [len(p) for p in positions]
        if len(parts) == 1:
            return parts[0][1], list(parts[0][2]), counts
        losses: list[Any] = [None] * len(rngs)
        scores: list[Any] = [None] * len(rngs)
        for idx, loss, score in parts:
            for r, j in enumerate(idx):
                losses[j], scores[j] = loss[r], score[r]
        return torch.stack(losses), scores, counts

    @staticmethod
    def _windows(batch: StackBatch) -> torch.Tensor:
        """Every member's windows with their last target appended ``[K, B, W + 1]``."""
        items, lengths = batch.items, batch.lengths.unsqueeze(2)
        full = torch.cat([items, torch.zeros_like(items[..., :1])], dim=2)
        last = required(batch.targets, "targets").gather(2, lengths - 1) + 1
        return full.scatter_(2, lengths, last)

    def _cloze(self, host_lengths: np.ndarray, width: int, rng: np.random.Generator
               ) -> np.ndarray:
        """A member's Cloze positions, flat in its two copies ``[2B, width]`` of its windows
        (``host_lengths`` the windows' lengths): each item masked with probability
        ``mask_prob`` (at least one per window) in the first copy, the last item in the
        second."""
        b = len(host_lengths)
        real = host_lengths + 1
        masked = (rng.random((b, width)) < self.config.mask_prob) & \
            (np.arange(width)[None, :] < real[:, None])
        none = np.flatnonzero(~masked.any(1))
        masked[none, real[none] - 1] = True
        return np.concatenate([np.flatnonzero(masked),                       # Cloze copy
                               (b + np.arange(b)) * width + real - 1])       # last-item copy

    def _query_hidden(self, net, batch: Batch) -> torch.Tensor:
        items, keep = _append_mask(batch.items, batch.lengths, net.mask_token,
                                   self.config.max_len)
        m = stk.Members.of(net)
        hidden = net(StackBatch.of([Batch(items, keep + 1, None, batch.users)]), m)[0]
        h = hidden[torch.arange(len(items), device=items.device), keep]
        return net.head(h.unsqueeze(0), m)[0]
