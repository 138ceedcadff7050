"""JODIE's coupled RNN updates of one group as a single autograd node.

For a processed row with inputs ``x = [u(t-), j(t-), Δ_u, Δ_j]`` (width ``2d + 2``) both cells
are one affine map ``z = W x + b`` (``W [2d, 2d+2]``: rows ``:d`` the user cell, ``d:`` the item
cell), then ``t = tanh(z)`` and each half is L2-normalised, ``n = t / max(||t||, ε)``
(``F.normalize``, ε = 1e-12). Rows of one t-batch level are independent; levels run in order and
read earlier levels' outputs from the group's buffer (layout in ``_jodie_plan.Plan``).

Backward, level by level in reverse (``g`` = gradient w.r.t. a level's outputs, accumulated from
every later reader):

    dt = (g - n (n·g)) / ||t||          (= g / ε where ||t|| <= ε)
    dz = dt ⊙ (1 - t²)
    dW += dzᵀ x,   db += Σ dz,   dx = dz W[:, :2d]  → added to the slots the level read

Two implementations with the same arithmetic: numba kernels for CPU tensors (one call per group
and direction; per-level cost a few microseconds) and torch operations for other devices (a
handful of kernels per level). ``impl="torch"`` forces the latter on the CPU (tests compare
them).
"""

from __future__ import annotations

import numpy as np
import torch
from numba import njit

__all__ = ["recurrence"]

_EPS = 1e-12


@njit(cache=True)
def _gather(buf, deltas, idx, a, z):  # pragma: no cover - numba
    d = buf.shape[1]
    x = np.empty((z - a, 2 * d + 2), np.float32)
    for r in range(z - a):
        su = idx[2 * (a + r)]
        si = idx[2 * (a + r) + 1]
        for c in range(d):
            x[r, c] = buf[su, c]
            x[r, d + c] = buf[si, c]
        x[r, 2 * d] = deltas[a + r, 0]
        x[r, 2 * d + 1] = deltas[a + r, 1]
    return x


@njit(cache=True)
def _mm(x, w):  # pragma: no cover - numba
    """``x @ w`` for small ``x``: row-of-``w`` outer loop, vectorisable axpy inner loop (no
    BLAS call: OpenBLAS threads cost more than they save on a few rows)."""
    n, k = x.shape
    out = np.zeros((n, w.shape[1]), np.float32)
    for kk in range(k):
        for r in range(n):
            v = x[r, kk]
            for j in range(w.shape[1]):
                out[r, j] += v * w[kk, j]
    return out


@njit(cache=True)
def _forward_nb(buf, act, norm, wt, b, deltas, idx, lptr, base):  # pragma: no cover - numba
    d = buf.shape[1]
    for lv in range(len(lptr) - 1):
        a, z = lptr[lv], lptr[lv + 1]
        zz = _mm(_gather(buf, deltas, idx, a, z), wt)
        for r in range(z - a):
            for h in range(2):
                s = np.float32(0.0)
                for c in range(d):
                    t = np.tanh(zz[r, h * d + c] + b[h * d + c])
                    act[a + r, h, c] = t
                    s += t * t
                nr = np.sqrt(s)
                norm[a + r, h, 0] = nr
                inv = np.float32(1.0) / max(nr, np.float32(_EPS))
                row = base + 2 * (a + r) + h
                for c in range(d):
                    buf[row, c] = act[a + r, h, c] * inv


@njit(cache=True)
def _backward_nb(grad, buf, act, norm, w_in, deltas, idx, lptr, base, gw,
                 gb):  # pragma: no cover - numba
    d = buf.shape[1]
    for lv in range(len(lptr) - 2, -1, -1):
        a, z = lptr[lv], lptr[lv + 1]
        n = z - a
        gz = np.empty((n, 2 * d), np.float32)
        for r in range(n):
            for h in range(2):
                row = base + 2 * (a + r) + h
                nr = norm[a + r, h, 0]
                if nr > _EPS:
                    dot = np.float32(0.0)
                    for c in range(d):
                        dot += act[a + r, h, c] / nr * grad[row, c]
                    for c in range(d):
                        t = act[a + r, h, c]
                        gz[r, h * d + c] = (grad[row, c] - t / nr * dot) / nr * (1 - t * t)
                else:
                    for c in range(d):
                        t = act[a + r, h, c]
                        gz[r, h * d + c] = grad[row, c] / np.float32(_EPS) * (1 - t * t)
        x = _gather(buf, deltas, idx, a, z)
        for r in range(n):
            for c in range(2 * d):
                v = gz[r, c]
                gb[c] += v
                for k in range(2 * d + 2):
                    gw[c, k] += v * x[r, k]
        gx = _mm(gz, w_in)
        for r in range(n):
            su = idx[2 * (a + r)]
            si = idx[2 * (a + r) + 1]
            for c in range(d):
                grad[su, c] += gx[r, c]
                grad[si, c] += gx[r, d + c]


def _levels_torch(levels: np.ndarray) -> list[tuple[int, int]]:
    return [(int(levels[j]), int(levels[j + 1])) for j in range(len(levels) - 1)]


class _Recurrence(torch.autograd.Function):
    @staticmethod
    def forward(ctx, entry, w, b, deltas, idx, levels, use_numba):  # noqa: D401
        n_ext, d = entry.shape
        g = deltas.shape[0]
        base = n_ext + 1
        buf = entry.new_zeros(n_ext + 1 + 2 * g, d)
        buf[:n_ext] = entry
        act = entry.new_empty(g, 2, d)
        norm = entry.new_empty(g, 2, 1)
        if use_numba:
            _forward_nb(buf.numpy(), act.numpy(), norm.numpy(),
                        w.detach().t().contiguous().numpy(), b.detach().numpy(),
                        deltas.numpy(), idx.numpy(), levels, base)
        else:
            wt = w.t()
            for a, z in _levels_torch(levels):
                x = torch.cat([buf.index_select(0, idx[2 * a:2 * z]).view(z - a, 2 * d),
                               deltas[a:z]], 1)
                t = torch.tanh(torch.addmm(b, x, wt)).view(z - a, 2, d)
                nrm = t.norm(dim=2, keepdim=True)
                act[a:z] = t
                norm[a:z] = nrm
                buf[base + 2 * a:base + 2 * z] = (t / nrm.clamp_min(_EPS)).view(2 * (z - a), d)
        ctx.save_for_backward(buf, act, norm, w, deltas, idx)
        ctx.levels, ctx.n_ext, ctx.use_numba = levels, n_ext, use_numba
        return buf

    @staticmethod
    def backward(ctx, grad):
        buf, act, norm, w, deltas, idx = ctx.saved_tensors
        n_ext, levels = ctx.n_ext, ctx.levels
        base = n_ext + 1
        d = buf.shape[1]
        grad = grad.contiguous().clone()
        gw = torch.zeros_like(w)
        gb = w.new_zeros(w.shape[0])
        w_in = w.detach()[:, :2 * d].contiguous()  # [2d, 2d]; dx = dz @ w_in
        if ctx.use_numba:
            _backward_nb(grad.numpy(), buf.numpy(), act.numpy(), norm.numpy(), w_in.numpy(),
                         deltas.numpy(), idx.numpy(), levels, base, gw.numpy(), gb.numpy())
            return grad[:n_ext], gw, gb, None, None, None, None
        for a, z in reversed(_levels_torch(levels)):
            n = z - a
            gn = grad[base + 2 * a:base + 2 * z].view(n, 2, d)
            t, nrm = act[a:z], norm[a:z]
            nrm_c = nrm.clamp_min(_EPS)
            out = t / nrm_c
            gt = torch.where(nrm > _EPS, (gn - out * (out * gn).sum(2, keepdim=True)) / nrm_c,
                             gn / _EPS)
            gz = (gt * (1.0 - t * t)).view(n, 2 * d)
            sel = idx[2 * a:2 * z]
            x = torch.cat([buf.index_select(0, sel).view(n, 2 * d), deltas[a:z]], 1)
            gw.addmm_(gz.t(), x)
            gb.add_(gz.sum(0))
            grad.index_add_(0, sel, (gz @ w_in).view(2 * n, d))
        return grad[:n_ext], gw, gb, None, None, None, None


def recurrence(entry: torch.Tensor, w: torch.Tensor, b: torch.Tensor, deltas: torch.Tensor,
               idx: torch.Tensor, levels: np.ndarray, impl: str = "auto") -> torch.Tensor:
    """The group's state buffer ``[n_ext + 1 + 2G, d]`` (differentiable w.r.t. ``entry``,
    ``w``, ``b``). ``levels``: int64 level boundaries (numpy); ``idx``: int64 read slots
    ``[2G]``; ``impl``: ``"auto"`` (numba on CPU float32, torch elsewhere), ``"torch"``."""
    use_numba = impl == "auto" and entry.device.type == "cpu" and entry.dtype == torch.float32
    return _Recurrence.apply(entry.contiguous(), w.contiguous(), b.contiguous(),
                             deltas.contiguous(), idx, levels, use_numba)
