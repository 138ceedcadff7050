"""What the attention models share: the layers of a pre-LN transformer block
(:class:`PreLNBlock`: SASRec's and TiSASRec's blocks) and the initialisation of embeddings and
linear weights from ``N(0, 0.02)`` (:func:`normal_rule`: SASRec, TiSASRec and BERT4Rec)."""

from __future__ import annotations

from torch import nn

from recaudit.models.sequential import _stack as stk
from recaudit.models.sequential._nn import init_normal

__all__ = ["PreLNBlock", "normal_rule"]


class PreLNBlock(nn.Module):
    """The layers SASRec's and TiSASRec's pre-LN blocks share, for ``K`` members: the
    attention's layer norm and projections (``ln_attn``, ``q``, ``kv``, ``out``:
    :meth:`_attention`) and the feed-forward part (``ln_ffn``, ``ff1``, ``ff2``:
    :meth:`_feed_forward`), made by two calls so that a block can add its own layers between
    them (the order of a block's parameters is the order a member's generator initialises
    them in)."""

    def _attention(self, k: int, dim: int, heads: int) -> None:
        self.heads = heads
        self.ln_attn = stk.LayerNorm(k, dim)
        self.q = stk.Linear(k, dim, dim)
        self.kv = stk.Linear(k, dim, 2 * dim)
        self.out = stk.Linear(k, dim, dim)

    def _feed_forward(self, k: int, dim: int, inner: int | None) -> None:
        self.ln_ffn = stk.LayerNorm(k, dim)
        self.ff1 = stk.Linear(k, dim, inner or dim)
        self.ff2 = stk.Linear(k, inner or dim, dim)


def normal_rule(std: float = 0.02):
    """Truncation-free N(0, 0.02) for embeddings and linear weights (BERT/SASRec practice)."""

    def rule(name, shape, g):
        if len(shape) == 2 and ("embedding" in name or "position" in name):
            w = init_normal(shape, std, g)
            if name.startswith("embedding"):
                w[0] = 0.0
            return w
        return None

    return rule
