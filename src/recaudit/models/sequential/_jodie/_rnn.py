"""JODIE's coupled RNN updates of a step (one group of each member of a stack) as a single
autograd node.

For a processed row with inputs ``x = [u(t-), j(t-), Δ_u, Δ_j]`` (width ``2d + 2``) both cells
are one affine map ``z = W x + b`` (member ``k``'s ``W [2d, 2d+2]``: rows ``:d`` the user cell,
``d:`` the item cell), then ``t = tanh(z)`` and each half is L2-normalised,
``n = t / max(||t||, ε)`` (``F.normalize``, ε = 1e-12). Rows of one t-batch level are
independent; levels run in order and read earlier levels' outputs from the step's buffer
(layout in :mod:`._steps`: every member's level ``l``, then level ``l + 1``).

Backward, level by level in reverse (``g`` = gradient w.r.t. a level's outputs, accumulated from
every later reader):

    dt = (g - n (n·g)) / ||t||          (= g / ε where ||t|| <= ε)
    dz = dt ⊙ (1 - t²)
    dW += dzᵀ x,   db += Σ dz,   dx = dz W[:, :2d]  → added to the slots the level read

Two implementations: numba kernels for CPU tensors (one call per step and direction, each
member's block of a level its own product, per-level cost a few microseconds) and torch
operations for other devices (a handful of batched kernels per level for all members: the
blocks of a level padded alike, :func:`row_pad`, as one ``baddbmm``).
``impl="torch"`` forces the latter on the CPU (tests, and the operator counts of
``benchmarks/bench_stack.py``). Each is exact per member: a member's numbers do not depend on
the other members of its stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from recaudit._jit import njit

from recaudit.models.sequential._stack import padded

__all__ = ["Cascade", "LevelGroup", "cascade", "row_pad", "uses_numba"]

_EPS = 1e-12


@dataclass(frozen=True)
class LevelGroup:
    """Rows ``lo:hi`` of a level: ``hi - lo = K' rows``, the blocks of members ``members``
    (stack positions, ``None``: all of them in order), ``rows`` each; ``idx`` their read
    slots ``[2 (hi - lo)]`` (``u(t-)``, ``j(t-)`` per row), ``deltas`` ``[K', rows, 2]``."""

    lo: int
    hi: int
    rows: int
    members: torch.Tensor | None
    idx: torch.Tensor
    deltas: torch.Tensor


@dataclass(frozen=True)
class Cascade:
    """What the recurrence of a step reads: ``n_rows`` rows (padding included), their read
    slots ``idx [2 n_rows]`` and time differences ``deltas [n_rows, 2]``; per level the
    member blocks (host arrays for the numba kernels: ``blk_ptr`` cuts the blocks into
    levels, block ``b`` is member ``blk_member[b]``'s rows ``blk_start[b]`` onwards,
    ``blk_n[b]`` of them) and the :class:`LevelGroup` s of the torch recurrence."""

    n_rows: int
    idx: torch.Tensor
    deltas: torch.Tensor
    blk_ptr: np.ndarray
    blk_member: np.ndarray
    blk_start: np.ndarray
    blk_n: np.ndarray
    levels: list[list[LevelGroup]]


def row_pad(use_numba: bool) -> Callable[[int], int]:
    """A member's rows at a level as a block of the buffer: the numba recurrence computes
    each row alone (no padding); the torch one pads to a multiple of ``ROWS``."""
    return (lambda n: n) if use_numba else padded



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
def _forward_nb(buf, act, norm, wt, b, deltas, idx, blk_ptr, blk_member, blk_start, blk_n,
                base):  # pragma: no cover - numba
    d = buf.shape[1]
    for lv in range(len(blk_ptr) - 1):
        for bl in range(blk_ptr[lv], blk_ptr[lv + 1]):
            k, a = blk_member[bl], blk_start[bl]
            z = a + blk_n[bl]
            zz = _mm(_gather(buf, deltas, idx, a, z), wt[k])
            for r in range(z - a):
                for h in range(2):
                    s = np.float32(0.0)
                    for c in range(d):
                        t = np.tanh(zz[r, h * d + c] + b[k, h * d + c])
                        act[a + r, h, c] = t
                        s += t * t
                    nr = np.sqrt(s)
                    norm[a + r, h, 0] = nr
                    inv = np.float32(1.0) / max(nr, np.float32(_EPS))
                    row = base + 2 * (a + r) + h
                    for c in range(d):
                        buf[row, c] = act[a + r, h, c] * inv


@njit(cache=True)
def _backward_nb(grad, buf, act, norm, w_in, deltas, idx, blk_ptr, blk_member, blk_start,
                 blk_n, base, gw, gb):  # pragma: no cover - numba
    d = buf.shape[1]
    for lv in range(len(blk_ptr) - 2, -1, -1):
        for bl in range(blk_ptr[lv], blk_ptr[lv + 1]):
            k, a = blk_member[bl], blk_start[bl]
            n = blk_n[bl]
            z = a + n
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
                    gb[k, c] += v
                    for q in range(2 * d + 2):
                        gw[k, c, q] += v * x[r, q]
            gx = _mm(gz, w_in[k])
            for r in range(n):
                su = idx[2 * (a + r)]
                si = idx[2 * (a + r) + 1]
                for c in range(d):
                    grad[su, c] += gx[r, c]
                    grad[si, c] += gx[r, d + c]


def _x(buf: torch.Tensor, lg) -> torch.Tensor:
    """The inputs ``[K', rows, 2d + 2]`` of a level group's rows."""
    kg = lg.deltas.shape[0]
    return torch.cat([buf.index_select(0, lg.idx).view(kg, lg.rows, -1),
                      lg.deltas.to(buf.dtype)], 2)


def _take(t: torch.Tensor, members: torch.Tensor | None) -> torch.Tensor:
    return t if members is None else t.index_select(0, members)


class _Cascade(torch.autograd.Function):
    @staticmethod
    def forward(ctx, entry, w, b, plan: Cascade, use_numba: bool):  # noqa: D401
        n_ent, d = entry.shape
        base = n_ent + 1
        buf = entry.new_zeros(base + 2 * plan.n_rows, d)
        buf[:n_ent] = entry
        act = entry.new_empty(plan.n_rows, 2, d)
        norm = entry.new_empty(plan.n_rows, 2, 1)
        if use_numba:
            _forward_nb(buf.numpy(), act.numpy(), norm.numpy(),
                        w.detach().transpose(1, 2).contiguous().numpy(), b.detach().numpy(),
                        plan.deltas.numpy(), plan.idx.numpy(), plan.blk_ptr, plan.blk_member,
                        plan.blk_start, plan.blk_n, base)
        else:
            for level in plan.levels:
                for lg in level:
                    lo, hi = lg.lo, lg.hi
                    z = torch.baddbmm(_take(b, lg.members).unsqueeze(1), _x(buf, lg),
                                      _take(w, lg.members).transpose(1, 2))
                    t = torch.tanh(z).view(hi - lo, 2, d)
                    nrm = t.norm(dim=2, keepdim=True)
                    act[lo:hi] = t
                    norm[lo:hi] = nrm
                    buf[base + 2 * lo:base + 2 * hi] = (t / nrm.clamp_min(_EPS)).view(-1, d)
        ctx.save_for_backward(buf, act, norm, w)
        ctx.plan, ctx.n_ent, ctx.use_numba = plan, n_ent, use_numba
        return buf

    @staticmethod
    def backward(ctx, grad):
        buf, act, norm, w = ctx.saved_tensors
        plan, n_ent = ctx.plan, ctx.n_ent
        base = n_ent + 1
        d = buf.shape[1]
        grad = grad.contiguous().clone()
        gw = torch.zeros_like(w)
        gb = w.new_zeros(w.shape[:2])
        if ctx.use_numba:
            w_in = w.detach()[:, :, :2 * d].contiguous()  # [K, 2d, 2d]; dx = dz @ w_in
            _backward_nb(grad.numpy(), buf.numpy(), act.numpy(), norm.numpy(), w_in.numpy(),
                         plan.deltas.numpy(), plan.idx.numpy(), plan.blk_ptr, plan.blk_member,
                         plan.blk_start, plan.blk_n, base, gw.numpy(), gb.numpy())
            return grad[:n_ent], gw, gb, None, None
        for level in reversed(plan.levels):
            for lg in level:
                lo, hi = lg.lo, lg.hi
                gn = grad[base + 2 * lo:base + 2 * hi].view(hi - lo, 2, d)
                t, nrm = act[lo:hi], norm[lo:hi]
                nrm_c = nrm.clamp_min(_EPS)
                out = t / nrm_c
                gt = torch.where(nrm > _EPS,
                                 (gn - out * (out * gn).sum(2, keepdim=True)) / nrm_c, gn / _EPS)
                gz = (gt * (1.0 - t * t)).view(-1, lg.rows, 2 * d)
                pw = torch.bmm(gz.transpose(1, 2), _x(buf, lg))
                pb = gz.sum(1)
                gx = torch.bmm(gz, _take(w, lg.members)[:, :, :2 * d])
                if lg.members is None:
                    gw.add_(pw)
                    gb.add_(pb)
                else:
                    gw.index_add_(0, lg.members, pw)
                    gb.index_add_(0, lg.members, pb)
                grad.index_add_(0, lg.idx, gx.view(-1, d))
        return grad[:n_ent], gw, gb, None, None


def uses_numba(impl: str, device: torch.device) -> bool:
    """Whether the recurrence ``impl`` (``"auto"``: numba on the CPU, ``"torch"``) runs the
    numba kernels on ``device``."""
    return impl == "auto" and torch.device(device).type == "cpu"


def cascade(entry: torch.Tensor, w: torch.Tensor, b: torch.Tensor, plan: Cascade,
            use_numba: bool) -> torch.Tensor:
    """The step's state buffer ``[n_entries + 1 + 2 n_rows, d]`` (differentiable w.r.t.
    ``entry [n_entries, d]`` and every member's cell weights ``w [K, 2d, 2d+2]`` and biases
    ``b [K, 2d]``; float32), from the step's plan (:class:`Cascade`)."""
    return _Cascade.apply(entry.contiguous(), w.contiguous(), b.contiguous(), plan, use_numba)
