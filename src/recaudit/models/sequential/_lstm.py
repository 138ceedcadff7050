"""LSTM next-item model (Oh et al. 2022 §3: "given a sequence of items, it predicts the next item via
Long Short-Term Memory"; Hochreiter & Schmidhuber 1997, used for next-item prediction by
Hidasi et al. 2016 and by the CASPER reference code).

    e_j = Dropout(E[s_j])                               trainable item embedding (d = 128)
    (h_j, c_j) = LSTM(e_j, (h_{j-1}, c_{j-1}))          i, f, o gates and cell update:
        i = σ(W_i e + U_i h + b_i), f = σ(W_f e + U_f h + b_f), o = σ(W_o e + U_o h + b_o)
        c' = f ⊙ c + i ⊙ tanh(W_c e + U_c h + b_c),  h' = o ⊙ tanh(c')
    score(i | s_1..s_j) = W_out[i] . Dropout(h_j) + b_out[i]     untied output layer

The CASPER reference LSTM never trains its item embeddings (noted in issue 4); here they are
trained. Context: the most recent ``max_len = 50`` items (Oh et al. 2022 §5).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from recaudit.errors import ConfigError
from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet, SeededDropout
from recaudit.models._registry import register
from recaudit.models.sequential._samples import Batch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import SequentialConfig

__all__ = ["LSTM"]


@dataclass(frozen=True)
class LSTMConfig(SequentialConfig):
    """LSTM options (see :class:`SequentialConfig`). hidden_dim: state size (128);
    layers: stacked LSTM layers (1)."""

    hidden_dim: int = 128
    layers: int = 1

    def validate(self) -> None:
        super().validate()
        for key in ("hidden_dim", "layers"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"LSTMConfig.{key} = {v!r}: must be an integer >= 1")


class _LSTMNet(SequenceNet):
    def __init__(self, n_items: int, cfg: LSTMConfig) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_items + 1, cfg.embedding_dim, padding_idx=0,
                                      device="meta")
        self.drop_in = SeededDropout(cfg.dropout)
        self.lstm = nn.LSTM(cfg.embedding_dim, cfg.hidden_dim, num_layers=cfg.layers,
                            batch_first=True, device="meta")
        self.drop_out = SeededDropout(cfg.dropout)
        self.out = nn.Linear(cfg.hidden_dim, n_items, device="meta")

    def forward(self, batch: Batch) -> torch.Tensor:
        h, _ = self.lstm(self.drop_in(self.embedding(batch.items)))
        return h

    def head(self, h: torch.Tensor) -> torch.Tensor:
        return self.drop_out(h)

    @classmethod
    def stacked_forward(cls, nets, batches):
        items = torch.stack([b.items for b in batches])
        x = stk.dropout(stk.embed([n.embedding for n in nets], items), [n.drop_in for n in nets])
        return stk.per_member(lambda net, xk: net.lstm(xk)[0], nets, x)

    @classmethod
    def stacked_head(cls, nets, h):
        return stk.dropout(h, [n.drop_out for n in nets])

    def output(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.out.weight, self.out.bias


@register("lstm")
class LSTM(SequentialRecommender):
    """LSTM next-item recommender (Oh et al. 2022's LSTM); see the module docstring."""

    Config = LSTMConfig

    def _network(self, n_items: int) -> SequenceNet:
        return _LSTMNet(n_items, self.config)

    def _batches_in_stack(self) -> bool:
        return True
