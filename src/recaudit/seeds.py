"""Seeds are data: derive independent, order-free random streams from keys.

``derive_seed(42, "perturb", "random-delete")`` always gives the same 63-bit integer for the same
keys, whatever process or order computes it; ``make_rng(*keys)`` wraps it in a numpy
``Generator`` and ``make_torch_generator(*keys)`` in a ``torch.Generator``. Nothing here touches
global random state.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["derive_seed", "make_rng", "make_torch_generator"]


def derive_seed(*keys: object) -> int:
    """A non-negative 63-bit seed determined by ``keys`` (ints, strings, floats, tuples)."""
    h = hashlib.blake2b(repr(tuple(keys)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def make_rng(*keys: object) -> np.random.Generator:
    """A numpy ``Generator`` (PCG64) seeded from ``keys``."""
    return np.random.default_rng(derive_seed(*keys))


def make_torch_generator(*keys: object, device="cpu"):
    """A ``torch.Generator`` on ``device`` (CPU by default) seeded from ``keys``.

    The same keys give the same stream on a given device type; CPU and CUDA generators are
    different algorithms (Mersenne Twister, Philox), so their draws differ.
    """
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(derive_seed(*keys))
    return g
