"""Training settings and seeded initialisation shared by MIRROR's algorithms.

Training and inference run inside :func:`recaudit._torch.deterministic_torch` (one thread,
deterministic kernels), the scope the recommendation models use too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recaudit.config import Config

__all__ = ["TrainConfig", "seeded_init"]


@dataclass(frozen=True)
class TrainConfig(Config):
    """Training hyper-parameters of the MIRROR algorithms (small defaults: CPU, seconds).

    epochs: passes over the training data (>= 1). batch_size: samples per step. lr: Adam
    learning rate (> 0). hidden: hidden layer width. embed: embedding size. weight_decay:
    Adam's L2 coefficient. patience: (sequential models, :class:`DNN` and :class:`GRU`, only)
    early stopping: a seeded ``val_fraction`` of the training rows is held out; training stops
    after ``patience`` epochs without a lower validation loss (at most ``epochs``) and keeps
    the weights of the best epoch; ``None`` trains exactly ``epochs`` epochs on all rows.
    val_fraction: the held-out share for ``patience`` (in (0, 1)).
    """

    epochs: int = 20
    batch_size: int = 128
    lr: float = 5e-3
    hidden: int = 32
    embed: int = 8
    weight_decay: float = 0.0
    patience: int | None = None
    val_fraction: float = 0.1

    def validate(self) -> None:
        for name in ("epochs", "batch_size", "hidden", "embed"):
            if getattr(self, name) < 1:
                raise self.invalid(name, f"must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise self.invalid("lr", f"must be > 0, got {self.lr}")
        if self.weight_decay < 0:
            raise self.invalid("weight_decay", f"must be >= 0, got {self.weight_decay}")
        if self.patience is not None and self.patience < 1:
            raise self.invalid("patience", f"must be >= 1 or None, got {self.patience}")
        if not 0.0 < self.val_fraction < 1.0:
            raise self.invalid("val_fraction", f"must lie in (0, 1), got {self.val_fraction}")


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
