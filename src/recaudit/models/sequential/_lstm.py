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


import torch

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet
from recaudit.models._registry import register
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import LSTMConfig

__all__ = ["LSTM"]


class _LSTMNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: LSTMConfig) -> None:
        super().__init__()
        self.embedding = stk.Embedding(k, n_items + 1, cfg.embedding_dim, padding_idx=0)
        self.drop_in = stk.Dropout(cfg.dropout)
        self.lstm = stk.Recurrent("LSTM", k, cfg.embedding_dim, cfg.hidden_dim,
                                  num_layers=cfg.layers, recurrence=cfg.recurrence)
        self.drop_out = stk.Dropout(cfg.dropout)
        self.out = stk.Linear(k, cfg.hidden_dim, n_items)

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        return self.lstm(self.drop_in(self.embedding(batch.items, m), m), m)

    def head(self, h: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return self.drop_out(h, m)

    def output(self, m: stk.Members) -> tuple[torch.Tensor, torch.Tensor | None]:
        return m.take(self.out.weight), self.out.bias_of(m)


@register("lstm")
class LSTM(SequentialRecommender):
    """LSTM next-item recommender (Oh et al. 2022's LSTM); see the module docstring."""

    Config = LSTMConfig

    def _network(self, n_items: int, k: int = 1) -> SequenceNet:
        return _LSTMNet(k, n_items, self.config)
