"""GRU4Rec (Hidasi, Karatzoglou, Baltrunas, Tikk. *Session-based Recommendations with Recurrent
Neural Networks.* ICLR 2016).

Architecture (as RecBole's GRU4Rec, which follows the paper with a cross-entropy loss):

    e_j = Dropout(E[s_j])                      item embedding, E in R^{(|I|+1) x d}
    h_j = GRU(e_j, h_{j-1})                    ``layers`` stacked GRU layers, h_0 = 0
    z_j = W_d h_j + b_d                        dense layer back to the embedding size
    score(i | s_1..s_j) = z_j . E[i]           output tied to the input embedding

GRU gates (Cho et al. 2014, the paper's eq. 1-4): ``z = σ(W_z x + U_z h)``,
``r = σ(W_r x + U_r h)``, ``ĥ = tanh(W x + U (r ⊙ h))``, ``h' = (1 - z) h + z ĥ``.

Deviations from the paper, on purpose: the loss is the full-softmax cross-entropy over the
whole catalogue (the paper's session-parallel BPR/TOP1 with sampled negatives makes the rank
list depend on the negative sampler); training uses windows of up to ``max_len`` items in which
every position predicts the next item (the effect of session-parallel mini-batches, with the
hidden state restarting at each window) or, with ``samples="prefix"``, one sample per target;
sizes follow
Oh et al. 2022 §5 (embedding 128) rather than the paper's 100/1000 hidden units.
"""

from __future__ import annotations


import torch

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import SequenceNet
from recaudit.models._registry import register
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._base import SequentialRecommender
from recaudit.models.sequential._config import GRU4RecConfig

__all__ = ["GRU4Rec"]


class _GRU4RecNet(SequenceNet):
    def __init__(self, k: int, n_items: int, cfg: GRU4RecConfig) -> None:
        super().__init__()
        d, h = cfg.embedding_dim, cfg.hidden_dim
        self.embedding = stk.Embedding(k, n_items + 1, d, padding_idx=0)
        self.drop = stk.Dropout(cfg.dropout)
        self.gru = stk.Recurrent("GRU", k, d, h, num_layers=cfg.layers, bias=False,
                                 recurrence=cfg.recurrence)
        self.dense = stk.Linear(k, h, d)

    def forward(self, batch: StackBatch, m: stk.Members) -> torch.Tensor:
        return self.gru(self.drop(self.embedding(batch.items, m), m), m)

    def head(self, h: torch.Tensor, m: stk.Members) -> torch.Tensor:
        return self.dense(h, m)

    def output(self, m: stk.Members) -> tuple[torch.Tensor, None]:
        return m.take(self.embedding.weight)[:, 1:], None


@register("gru4rec")
class GRU4Rec(SequentialRecommender):
    """GRU4Rec next-item model (Hidasi et al., ICLR 2016); see the module docstring."""

    Config = GRU4RecConfig

    def _network(self, n_items: int, k: int = 1) -> SequenceNet:
        return _GRU4RecNet(k, n_items, self.config)
