"""Slate ranking algorithms of MIRROR (Zhu et al. 2023, §5.1.2 and §5.2.2): DeepFM, LambdaFM, SetRank.

All three score the candidates of a slate from observable features only:
``fit(users [n, g], docs [n, K, f], clicks [n, K], *, seed)`` trains on logged slates and
``score(users [B, g], docs [B, L, f]) -> [B, L]`` scores candidates (higher = earlier).

* **DeepFM** (Guo et al. 2017), point-wise: each numeric feature ``x_i`` is a field with embedding
  ``e_i = x_i v_i``; ``logit = w.x + b + FM(e) + MLP(e)`` with
  ``FM(e) = 1/2 sum_k [(sum_i e_ik)^2 - sum_i e_ik^2]``; binary cross-entropy on clicks.
* **LambdaFM** (Yuan et al. 2016): the DeepFM encoder trained pair-wise, LambdaRank style: for each
  pair with ``y_i > y_j`` the loss ``|dNDCG_ij| log(1 + exp(-(s_i - s_j)))`` where ``dNDCG_ij``
  is the NDCG change of swapping ``i`` and ``j`` in the current score order (gains ``2^y - 1``).
* **SetRank** (Pang et al. 2020): a permutation-equivariant self-attention encoder over the slate
  (two Transformer encoder blocks, no positional information) and a linear scorer, trained with the
  attention loss ``-sum_i t_i log softmax(s)_i``, ``t = y / sum(y)`` (slates without clicks
  skipped).

Training draws its initial weights and batch order from ``make_torch_generator(seed, name)``, on
one thread, so a seed gives bit-identical scores.
"""

from __future__ import annotations

import numpy as np

from recaudit.seeds import make_torch_generator
from recaudit._torch import deterministic_torch
from recaudit.simulate._torch_util import TrainConfig, seeded_init

__all__ = ["DeepFM", "LambdaFM", "SetRank"]


def _deepfm_module(n_fields: int, cfg: TrainConfig):
    import torch
    from torch import nn

    class _DeepFM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(n_fields, 1)
            self.v = nn.Parameter(torch.zeros(n_fields, cfg.embed))
            self.mlp = nn.Sequential(nn.Linear(n_fields * cfg.embed, cfg.hidden), nn.ReLU(),
                                     nn.Linear(cfg.hidden, 1))

        def forward(self, x):  # x [..., F]
            e = x.unsqueeze(-1) * self.v  # [..., F, k]
            fm = 0.5 * (e.sum(-2).pow(2) - e.pow(2).sum(-2)).sum(-1)
            deep = self.mlp(e.flatten(-2)).squeeze(-1)
            return self.linear(x).squeeze(-1) + fm + deep

    return _DeepFM()


def _setrank_module(n_fields: int, cfg: TrainConfig):
    from torch import nn

    class _SetRank(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            d = 2 * cfg.embed
            self.inp = nn.Linear(n_fields, d)
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(d, nhead=2, dim_feedforward=cfg.hidden, dropout=0.0,
                                           batch_first=True) for _ in range(2))
            self.out = nn.Linear(d, 1)

        def forward(self, x, pad=None):  # x [B, L, F]; pad [B, L] True = padding
            h = self.inp(x)
            for blk in self.blocks:
                h = blk(h, src_key_padding_mask=pad)
            return self.out(h).squeeze(-1)

    return _SetRank()


def _inputs(users, docs):
    import torch

    users = np.asarray(users, dtype=np.float32)
    docs = np.asarray(docs, dtype=np.float32)
    if docs.ndim != 3 or users.ndim != 2 or users.shape[0] != docs.shape[0]:
        raise ValueError(f"expected users [n, g] and docs [n, L, f] with the same n; got "
                         f"{users.shape} and {docs.shape}")
    u = np.broadcast_to(users[:, None, :], (docs.shape[0], docs.shape[1], users.shape[1]))
    return torch.from_numpy(np.ascontiguousarray(np.concatenate([u, docs], axis=-1)))


class _SlateModel:
    name = "slate-model"

    def __init__(self, config: TrainConfig | None = None) -> None:
        self.config = config or TrainConfig()

    def _build(self, n_fields):  # pragma: no cover - abstract
        raise NotImplementedError

    def _loss(self, scores, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit(self, users, docs, clicks, *, seed: int):
        import torch

        x = _inputs(users, docs)
        y = torch.as_tensor(np.asarray(clicks, dtype=np.float32))
        if y.shape != x.shape[:2]:
            raise ValueError(f"clicks must be [n, K] = {tuple(x.shape[:2])}; got {tuple(y.shape)}")
        cfg = self.config
        if cfg.patience is not None:
            raise ValueError(f"{self.name}: early stopping (TrainConfig.patience) is implemented "
                             "for the sequential models DNN and GRU only; set patience=None")
        g = make_torch_generator(seed, "mirror", self.name)
        with deterministic_torch():
            self.module_ = self._build(x.shape[-1])
            seeded_init(self.module_, g)
            opt = torch.optim.Adam(self.module_.parameters(), lr=cfg.lr,
                                   weight_decay=cfg.weight_decay)
            n = x.shape[0]
            for _ in range(cfg.epochs):
                perm = torch.randperm(n, generator=g)
                for start in range(0, n, cfg.batch_size):
                    idx = perm[start:start + cfg.batch_size]
                    loss = self._loss(self.module_(x[idx]), y[idx])
                    if loss is None:
                        continue
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
        return self

    def score(self, users, docs) -> np.ndarray:
        import torch

        if not hasattr(self, "module_"):
            raise RuntimeError(f"{self.name} is not trained: call fit() first")
        with deterministic_torch(), torch.no_grad():
            return self.module_(_inputs(users, docs)).double().numpy()


class DeepFM(_SlateModel):
    """Point-wise DeepFM click model (see the module docstring)."""

    name = "DeepFM"

    def _build(self, n_fields):
        return _deepfm_module(n_fields, self.config)

    def _loss(self, scores, y):
        import torch.nn.functional as F

        return F.binary_cross_entropy_with_logits(scores, y)


class LambdaFM(DeepFM):
    """DeepFM encoder trained with the ΔNDCG-weighted pair-wise (LambdaRank) loss."""

    name = "LambdaFM"

    def _loss(self, scores, y):
        import torch
        import torch.nn.functional as F

        k = y.shape[1]
        with torch.no_grad():
            rank = torch.argsort(torch.argsort(-scores, dim=1, stable=True), dim=1)  # 0-based
            disc = 1.0 / torch.log2(rank.float() + 2.0)
            gain = 2.0 ** y - 1.0
            ideal = (torch.sort(gain, dim=1, descending=True).values
                     / torch.log2(torch.arange(k, dtype=torch.float32) + 2.0)).sum(1, keepdim=True)
            swap = (gain[:, :, None] - gain[:, None, :]) * (disc[:, :, None] - disc[:, None, :])
            delta = swap.abs() / ideal[:, :, None].clamp_min(1e-12)
            pairs = (y[:, :, None] > y[:, None, :]).float()
        w = delta * pairs
        if w.sum() == 0:
            return None
        diff = scores[:, :, None] - scores[:, None, :]
        return (w * F.softplus(-diff)).sum() / y.shape[0]


class SetRank(_SlateModel):
    """Self-attention slate reranker with the attention loss (see the module docstring)."""

    name = "SetRank"

    def _build(self, n_fields):
        return _setrank_module(n_fields, self.config)

    def _loss(self, scores, y):
        import torch

        tot = y.sum(1)
        keep = tot > 0
        if not keep.any():
            return None
        t = y[keep] / tot[keep, None]
        return -(t * torch.log_softmax(scores[keep], dim=1)).sum(1).mean()
