"""Small torch helpers shared by MIRROR's algorithms: seeded initialisation, one-thread scope."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

__all__ = ["TrainConfig", "seeded_init", "one_thread"]


@dataclass(frozen=True)
class TrainConfig:
    """Training hyper-parameters of the MIRROR algorithms (small defaults: CPU, seconds).

    ``patience`` (sequential models, :class:`DNN` and :class:`GRU`, only): early stopping. A
    seeded ``val_fraction`` of the training rows is held out; training stops after ``patience``
    epochs without a lower validation loss (at most ``epochs``) and keeps the weights of the
    best epoch. ``None`` trains exactly ``epochs`` epochs on all rows.
    """

    epochs: int = 20
    batch_size: int = 128
    lr: float = 5e-3
    hidden: int = 32
    embed: int = 8
    weight_decay: float = 0.0
    patience: int | None = None
    val_fraction: float = 0.1

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "hidden", "embed"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig.{name} must be >= 1; got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"TrainConfig.lr must be > 0; got {self.lr}")
        if self.patience is not None and self.patience < 1:
            raise ValueError(f"TrainConfig.patience must be >= 1 or None; got {self.patience}")
        if not 0.0 < self.val_fraction < 1.0:
            raise ValueError(f"TrainConfig.val_fraction must lie in (0, 1); got "
                             f"{self.val_fraction}")


def seeded_init(module, generator) -> None:
    """Re-initialise every random parameter of ``module`` from ``generator`` (no global RNG):
    matrices ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), biases 0, other vectors (norm gains) kept."""
    import torch

    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.ndim >= 2:
                bound = 1.0 / math.sqrt(p.shape[1])
                p.copy_(torch.rand(p.shape, generator=generator) * 2 * bound - bound)
            elif "bias" in name.rsplit(".", 1)[-1]:
                p.zero_()


@contextlib.contextmanager
def one_thread():
    """Run torch on one intra-op thread inside the block (restored afterwards)."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(prev)
