"""Seeds are data: derive independent, order-free random streams from keys.

``derive_seed(42, "perturb", "random-delete")`` always gives the same 63-bit integer for the same
keys, whatever process or order computes it; ``make_rng(*keys)`` wraps it in a numpy
``Generator`` and ``make_torch_generator(*keys)`` in a ``torch.Generator``. Nothing here touches
global random state.

Keys are normalised before hashing, so equal numbers give equal seeds whatever their type:
numpy integers are Python ``int`` (``derive_seed(np.int64(0)) == derive_seed(0)``), numpy
floats Python ``float``, numpy strings ``str``, numpy booleans ``bool`` and lists tuples. The
hash is BLAKE2b (8 bytes) of ``repr`` of the normalised key tuple, so Python-typed keys give the
seeds they always gave. Anything else (objects whose ``repr`` is not data) is a ``TypeError``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["derive_seed", "make_rng", "make_torch_generator", "normalise_key"]


def normalise_key(key: object) -> Any:
    """``key`` as plain Python data (see the module docstring); ``TypeError`` if it is not."""
    if key is None:
        return None
    if isinstance(key, (bool, np.bool_)):  # before int: bool is an int subclass
        return bool(key)
    if isinstance(key, (int, np.integer)):
        return int(key)
    if isinstance(key, (float, np.floating)):  # np.float64 is a float subclass
        return float(key)
    if isinstance(key, str):  # np.str_ is a str subclass with another repr
        return str(key)
    if isinstance(key, bytes):
        return bytes(key)
    if isinstance(key, (tuple, list)):
        return tuple(normalise_key(k) for k in key)
    raise TypeError(f"a seed key must be an int, float, str, bytes, bool, None or a tuple of "
                    f"them; got {type(key).__name__} {key!r}")


def derive_seed(*keys: object) -> int:
    """A non-negative 63-bit seed determined by ``keys`` (ints, strings, floats, tuples)."""
    data = repr(normalise_key(keys)).encode()
    h = hashlib.blake2b(data, digest_size=8).digest()
    return int.from_bytes(h, "little") & ((1 << 63) - 1)


def make_rng(*keys: object) -> np.random.Generator:
    """A numpy ``Generator`` (PCG64) seeded from ``keys``."""
    return np.random.default_rng(derive_seed(*keys))


def make_torch_generator(*keys: object, device: Any = "cpu") -> Any:
    """A ``torch.Generator`` on ``device`` (CPU by default) seeded from ``keys``.

    The same keys give the same stream on a given device type; CPU and CUDA generators are
    different algorithms (Mersenne Twister, Philox), so their draws differ.
    """
    import torch

    g = torch.Generator(device=device)
    g.manual_seed(derive_seed(*keys))
    return g
