"""Dropout masks of every member of a stack from a counter-based generator, in one pass.

A torch ``Generator`` draws one member's numbers in one call, so a stack of ``K`` members needs
``K`` draws per dropout layer. Here a member's random numbers are a *hash* of a counter instead:
element ``i`` of a member's draws at one training step is ::

    u = fmix32(i·φ  XOR  key) >>> 8          (24 bits; keep the element when u >= p·2^24)

with ``φ = 0x9E3779B9`` (odd: ``i ↦ i·φ`` is a bijection of the 32-bit integers),
``fmix32`` MurmurHash3's finaliser (a bijection that mixes every input bit into every output
bit) and ``key`` the member's key for the step: ``fmix32(member key XOR step tag)``, the member
key folded from ``derive_seed(seed, model, "dropout")`` and the step tag from the epoch and the
step's index in it. ``i`` counts the elements the member draws at the step, layer after layer in
the order the forward pass meets them. So all members' masks of a layer are one elementwise
computation over ``[K, ...]`` int32 tensors (a dozen operations whatever ``K``), a member's mask
depends only on its own key, step and layer (not on its neighbours: integer arithmetic is exact
and wraps modulo 2^32 on every device), and CPU and CUDA draw the same masks.

The keep probability is ``1 - ceil(p·2^24)/2^24`` (within ``6e-8`` of ``1 - p``). Two
(member, step) keys collide with probability ``2^-32`` per pair: a collision repeats a mask, it
does not bias one. :func:`reference_bits` is the same function in plain Python (tests).
"""

from __future__ import annotations

import math

import torch

__all__ = ["PHI", "fmix32", "fold", "step_tag", "member_bits", "keep_mask", "reference_bits",
           "threshold"]

#: the golden-ratio multiplier 0x9E3779B9 as a signed 32-bit integer
PHI = 0x9E3779B9 - (1 << 32)
_M1 = 0x85EBCA6B - (1 << 32)
_M2 = 0xC2B2AE35 - (1 << 32)
_MASK = (1 << 32) - 1


def _signed(x: int) -> int:
    x &= _MASK
    return x - (1 << 32) if x >= 1 << 31 else x


def fmix32(z: torch.Tensor) -> torch.Tensor:
    """MurmurHash3's 32-bit finaliser of an int32 tensor (logical shifts by masking)."""
    z = z ^ ((z >> 16) & 0xFFFF)
    z = z * _M1
    z = z ^ ((z >> 13) & 0x7FFFF)
    z = z * _M2
    return z ^ ((z >> 16) & 0xFFFF)


def _fmix_int(z: int) -> int:
    z &= _MASK
    z ^= z >> 16
    z = (z * 0x85EBCA6B) & _MASK
    z ^= z >> 13
    z = (z * 0xC2B2AE35) & _MASK
    return z ^ (z >> 16)


def fold(seed: int) -> int:
    """A member key: a 63-bit seed folded to a signed 32-bit integer."""
    return _signed(_fmix_int(seed ^ (seed >> 32)))


def step_tag(epoch: int, step: int) -> int:
    """The tag of a step (signed 32-bit): epoch and index mixed, distinct for every pair
    below 2^16 epochs and 2^16 steps."""
    return _signed(_fmix_int(((epoch & 0xFFFF) << 16) | (step & 0xFFFF)) ^ 0x5BD1E995)


def threshold(p: float) -> int:
    """``ceil(p·2^24)``: an element is kept when its 24-bit draw is at least this."""
    return math.ceil(p * (1 << 24))


def member_bits(keys: torch.Tensor, start: int, shape: tuple[int, ...]) -> torch.Tensor:
    """Each member's 24-bit draws ``[K, *shape]`` (int32) for elements ``start ..`` of its
    step, ``keys`` ``[K]`` int32 the members' step keys."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(start, start + n, dtype=torch.int32, device=keys.device) * PHI
    z = fmix32(i.unsqueeze(0) ^ keys.unsqueeze(1))
    return ((z >> 8) & 0xFFFFFF).view(keys.shape[0], *shape)


def keep_mask(keys: torch.Tensor, start: int, shape: tuple[int, ...], cut: int,
              dtype: torch.dtype) -> torch.Tensor:
    """``member_bits(keys, start, shape) >= cut`` as ``0``/``1`` of ``dtype`` ``[K, *shape]``
    (a dropout mask, kept elements 1), computed in place in one int32 buffer: the same hash,
    fewer passes and no fresh buffer per operation (what makes the masks about as cheap as
    ``torch.rand``'s on the CPU). The 24-bit draw ``u = z >>> 8`` is at least ``cut`` exactly
    when ``z``, read unsigned, is at least ``256 cut``, which signed int32 arithmetic compares
    as ``z XOR 2^31 >= 256 cut - 2^31``."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(start, start + n, dtype=torch.int32, device=keys.device).mul_(PHI)
    z = i.unsqueeze(0) ^ keys.unsqueeze(1)
    t = torch.empty_like(z)
    for shift, low, mult in ((16, 0xFFFF, _M1), (13, 0x7FFFF, _M2), (16, 0xFFFF, None)):
        torch.bitwise_right_shift(z, shift, out=t)    # z >>> shift: arithmetic shift, masked
        z.bitwise_xor_(t.bitwise_and_(low))
        if mult is not None:
            z.mul_(mult)
    limit = cut * 256 - (1 << 31)
    if limit > _MASK >> 1:                            # cut = 2^24: nothing is kept
        return torch.zeros((keys.shape[0], *shape), dtype=dtype, device=keys.device)
    return torch.ge(z.bitwise_xor_(-(1 << 31)), limit).to(dtype).view(keys.shape[0], *shape)


def reference_bits(key: int, start: int, n: int) -> list[int]:
    """:func:`member_bits` of one member in plain Python integers (for tests)."""
    out = []
    for i in range(start, start + n):
        z = _fmix_int(((i * 0x9E3779B9) & _MASK) ^ (key & _MASK))
        out.append(z >> 8)
    return out
