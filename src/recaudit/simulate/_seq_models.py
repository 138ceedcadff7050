"""Sequential click models of MIRROR (Zhu et al. 2023, §5.3.2 and §5.4.2): DNN and GRU.

Both predict the click probability of one candidate document for one user at one round, from
observable features only: the user's profile ``x_u``, the candidate's features ``x_d`` and (GRU)
the user's click history (a sequence of document ids whose features are ``x_h``).

* **DNN**: ``logit = MLP([x_u, x_d]) + x_u' W x_d``; it does not see the history. (The bilinear
  user-document term, as in a factorisation machine, lets it learn "preference for this
  document's topic" from few samples.)
* **GRU**: ``logit = MLP([x_u, x_d, h]) + x_u' W x_d + h' V x_d``
  with ``h`` the last hidden state of a GRU run over a start
  token followed by the history's document features. ``dynamic=True`` ("GRU Dynamic") feeds the
  history including the clicks of the current session; ``dynamic=False`` ("GRU Static") only the
  history the user started with (§5.4.2).

Both are trained with binary cross-entropy; initial weights, batch order and the held-out rows of
early stopping come from ``make_torch_generator(seed, …)`` on one thread, so a seed gives
bit-identical scores. With ``TrainConfig.patience`` set, a seeded ``val_fraction`` of the rows is
held out and training keeps the weights of the epoch with the lowest held-out loss. Without it a
GRU on MIRROR's logs memorises the sessions' click histories (in the topic scenario its held-out
log loss rises from 0.68 to 0.76 over 20 epochs while its training loss falls to 0.59).
"""

from __future__ import annotations

import numpy as np

from recaudit.seeds import make_torch_generator
from recaudit._torch import deterministic_torch
from recaudit.simulate._torch_util import TrainConfig, seeded_init

__all__ = ["DNN", "GRU"]


def _module(n_user: int, n_doc: int, cfg: TrainConfig, recurrent: bool):
    import torch
    from torch import nn

    class _Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            extra = cfg.hidden if recurrent else 0
            self.mlp = nn.Sequential(nn.Linear(n_user + n_doc + extra, cfg.hidden), nn.ReLU(),
                                     nn.Linear(cfg.hidden, cfg.hidden), nn.ReLU(),
                                     nn.Linear(cfg.hidden, 1))
            self.cross = nn.Bilinear(n_user, n_doc, 1, bias=False)
            if recurrent:
                self.hcross = nn.Bilinear(cfg.hidden, n_doc, 1, bias=False)
                self.start = nn.Parameter(torch.zeros(1, 1, n_doc + 1))
                self.gru = nn.GRU(n_doc + 1, cfg.hidden, batch_first=True)

        def encode(self, hist, lengths):  # hist [B, T, n_doc]; lengths [B] (>= 0)
            from torch.nn.utils.rnn import pack_padded_sequence

            b = hist.shape[0]
            seq = torch.cat([torch.zeros(b, hist.shape[1], 1), hist], dim=-1)
            seq = torch.cat([self.start.expand(b, 1, -1) + _flag(b), seq], dim=1)
            packed = pack_padded_sequence(seq, (lengths + 1).cpu(), batch_first=True,
                                          enforce_sorted=False)
            _, h = self.gru(packed)
            return h[-1]

        def forward(self, xu, xd, h=None):  # xu [B, gu]; xd [B, L, gd]; h [B, H]
            xu = xu[:, None, :].expand(-1, xd.shape[1], -1).contiguous()
            parts = [xu, xd]
            out = self.cross(xu, xd)
            if h is not None:
                h = h[:, None, :].expand(-1, xd.shape[1], -1).contiguous()
                parts.append(h)
                out = out + self.hcross(h, xd)
            return (self.mlp(torch.cat(parts, dim=-1)) + out).squeeze(-1)

    def _flag(b):
        f = torch.zeros(b, 1, n_doc + 1)
        f[..., 0] = 1.0  # marks the start token
        return f

    return _Net()


def _pad(histories, doc_features: np.ndarray):
    import torch

    lengths = np.array([len(h) for h in histories], dtype=np.int64)
    t = max(1, int(lengths.max()) if len(lengths) else 1)
    out = np.zeros((len(histories), t, doc_features.shape[1]), dtype=np.float32)
    for i, h in enumerate(histories):
        if len(h):
            out[i, : len(h)] = doc_features[np.asarray(h)]
    return torch.from_numpy(out), torch.from_numpy(lengths)


class _SeqModel:
    name = "seq-model"
    recurrent = False

    def __init__(self, config: TrainConfig | None = None, dynamic: bool = True) -> None:
        self.config = config or TrainConfig()
        self.dynamic = dynamic

    def fit(self, users, docs, histories, clicks, doc_features, *, seed: int):
        """``users [N, gu]``, ``docs [N, gd]`` (shown document features), ``histories`` (N lists of
        document ids the model may see), ``clicks [N]``, ``doc_features [n_docs, gd]``."""
        import torch
        import torch.nn.functional as F

        xu = torch.as_tensor(np.asarray(users, dtype=np.float32))
        xd = torch.as_tensor(np.asarray(docs, dtype=np.float32))[:, None, :]
        y = torch.as_tensor(np.asarray(clicks, dtype=np.float32))
        if not (xu.shape[0] == xd.shape[0] == y.shape[0] == len(histories)):
            raise ValueError("users, docs, histories and clicks must have the same length")
        self.doc_features_ = np.asarray(doc_features, dtype=np.float32)
        hist, lengths = _pad(histories, self.doc_features_) if self.recurrent else (None, None)
        cfg = self.config
        g = make_torch_generator(seed, "mirror", self.name)
        n = xu.shape[0]
        rows, val = torch.arange(n), None
        if cfg.patience is not None:
            perm = torch.randperm(n, generator=g)
            n_val = max(1, int(round(cfg.val_fraction * n)))
            if n - n_val < 1:
                raise ValueError(f"{n} training rows are too few to hold out a validation part")
            val, rows = perm[:n_val], perm[n_val:]
        with deterministic_torch():
            self.module_ = _module(xu.shape[1], xd.shape[2], cfg, self.recurrent)
            seeded_init(self.module_, g)
            opt = torch.optim.Adam(self.module_.parameters(), lr=cfg.lr,
                                   weight_decay=cfg.weight_decay)

            def loss_of(idx):
                h = None
                if hist is not None and lengths is not None:     # recurrent
                    ln = lengths[idx]
                    h = self.module_.encode(hist[idx][:, : max(1, int(ln.max()))], ln)
                logit = self.module_(xu[idx], xd[idx], h).squeeze(-1)
                return F.binary_cross_entropy_with_logits(logit, y[idx])

            best, best_state, waited = float("inf"), None, 0
            self.epochs_ = 0
            for _ in range(cfg.epochs):
                perm = rows[torch.randperm(rows.numel(), generator=g)]
                for start in range(0, perm.numel(), cfg.batch_size):
                    loss = loss_of(perm[start:start + cfg.batch_size])
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                self.epochs_ += 1
                if val is None:
                    continue
                with torch.no_grad():
                    v = float(loss_of(val))
                if v < best:
                    best, waited = v, 0
                    best_state = {k: t.clone() for k, t in self.module_.state_dict().items()}
                else:
                    waited += 1
                    if cfg.patience is not None and waited >= cfg.patience:
                        break
            if best_state is not None:
                self.module_.load_state_dict(best_state)
                self.val_loss_ = best
        return self

    def score(self, users, cands, histories) -> np.ndarray:
        """Click logits ``[B, L]`` of candidates ``cands [B, L, gd]``."""
        import torch

        if not hasattr(self, "module_"):
            raise RuntimeError(f"{self.name} is not trained: call fit() first")
        with deterministic_torch(), torch.no_grad():
            xu = torch.as_tensor(np.asarray(users, dtype=np.float32))
            xd = torch.as_tensor(np.asarray(cands, dtype=np.float32))
            h = None
            if self.recurrent:
                hist, lengths = _pad(histories, self.doc_features_)
                h = self.module_.encode(hist, lengths)
            return self.module_(xu, xd, h).double().numpy()


class DNN(_SeqModel):
    """Feed-forward click model without history (see the module docstring)."""

    name = "DNN"


class GRU(_SeqModel):
    """GRU-over-history click model; ``dynamic`` chooses GRU Dynamic or GRU Static."""

    name = "GRU"
    recurrent = True
