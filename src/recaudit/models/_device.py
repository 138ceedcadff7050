"""Where a model trains: device names, resolved per process.

An executor deals devices to its workers (:func:`set_process_device`); a model with
``device="auto"`` or ``"cuda"`` then trains on its worker's device (:func:`resolve_device`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recaudit._torch import check_device
from recaudit.errors import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = ["check_device", "process_device", "resolve_device", "set_process_device"]

_PROCESS_DEVICE: str | None = None


def set_process_device(device: str | None) -> None:
    """This process's device for models with ``device="auto"`` or ``"cuda"`` (set by the
    audit's process executor for each worker; ``None`` restores the default)."""
    global _PROCESS_DEVICE
    _PROCESS_DEVICE = None if device is None else check_device(device)
    if device is not None and device.startswith("cuda:"):
        import torch

        if torch.cuda.is_available():
            torch.cuda.set_device(torch.device(device))


def resolve_device(device: str) -> torch.device:
    """``"cpu"``, ``"cuda"``/``"cuda:N"`` (error when absent) or ``"auto"`` (CUDA when present).

    ``"auto"`` and ``"cuda"`` follow :func:`set_process_device` when it was called (an
    executor's ``devices``). Results on CUDA are deterministic run to run but not bit-identical
    to CPU results; on a CPU-only host ``auto`` is ``cpu``, so it never changes results there.
    """
    import torch

    check_device(device)
    if device == "cpu":
        return torch.device("cpu")
    if _PROCESS_DEVICE not in (None, "auto") and device in ("auto", "cuda"):
        if _PROCESS_DEVICE == "cpu":
            if device == "auto":
                return torch.device("cpu")
        else:
            device = _PROCESS_DEVICE  # "cuda" or "cuda:N": this worker's GPU
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"device={device!r} but no CUDA device is available; use "
                          "device='cpu' or 'auto'")
    return torch.device(device)


def process_device() -> str | None:
    """The device :func:`set_process_device` set in this process (``None``: none set)."""
    return _PROCESS_DEVICE
