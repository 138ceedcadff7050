"""Torch execution scopes that leave no trace (deterministic kernels, a fixed thread count), and
the validation of device names (without importing torch).

:func:`deterministic_torch` switches on ``torch.use_deterministic_algorithms(True)`` and
``num_threads`` intra-op threads for the duration of a block (model training and ranking,
MIRROR's algorithms) and restores both afterwards. Float sums depend on the thread count, so a
fixed count is part of reproducibility. On CUDA, cuBLAS needs ``CUBLAS_WORKSPACE_CONFIG=:4096:8``
for deterministic matmuls; it is set (only if unset) for the block. Torch is imported when a
block starts, not when this module is.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

from recaudit.errors import ConfigError

__all__ = ["deterministic_torch", "check_device"]


@contextlib.contextmanager
def deterministic_torch(num_threads: int = 1, device: Any = "cpu",
                        fill_uninitialized: bool = True) -> Iterator[None]:
    """Deterministic algorithms and ``num_threads`` intra-op threads, restored on exit.

    ``fill_uninitialized=False`` spares the NaN fill that deterministic mode gives every
    freshly allocated tensor (``torch.utils.deterministic.fill_uninitialized_memory``): for
    code that never reads memory it did not write (the sequential models' training and
    ranking), where the fills are only work (measured: a third of SASRec's operators)."""
    import torch
    import torch.utils.deterministic as det

    device = torch.device(device)
    old_det = torch.are_deterministic_algorithms_enabled()
    old_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    old_threads = torch.get_num_threads()
    env_set = False
    if device.type == "cuda" and "CUBLAS_WORKSPACE_CONFIG" not in os.environ:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        env_set = True
    old_fill = det.fill_uninitialized_memory  # type: ignore[attr-defined]
    _set_deterministic(True)
    torch.set_num_threads(num_threads)
    det.fill_uninitialized_memory = fill_uninitialized  # type: ignore[attr-defined]
    try:
        yield
    finally:
        det.fill_uninitialized_memory = old_fill  # type: ignore[attr-defined]
        _set_deterministic(old_det, warn_only=old_warn)
        torch.set_num_threads(old_threads)
        if env_set:
            del os.environ["CUBLAS_WORKSPACE_CONFIG"]


def _set_deterministic(mode: bool, warn_only: bool = False) -> None:
    """``torch.use_deterministic_algorithms(mode, warn_only=warn_only)`` without its import of
    ``torch._inductor.config``, which imports TorchDynamo (measured: 1.2 CPU-s in every process
    that trains or ranks, about as long as importing torch). The flag it sets there,
    ``deterministic``, only steers ``torch.compile``, which this package never calls; it is
    still set when something else has imported the inductor already. The kernels chosen, and
    so every number, are those of the public call: both set the same flag in ``torch._C``."""
    import torch

    inductor: Any = sys.modules.get("torch._inductor.config")
    if inductor is not None:
        inductor.deterministic = mode
    torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)


def check_device(device: str) -> str:
    """Validate a device name: ``cpu``, ``cuda``, ``cuda:N`` or ``auto``."""
    if device in ("cpu", "cuda", "auto") or (
            isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit()):
        return device
    raise ConfigError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
