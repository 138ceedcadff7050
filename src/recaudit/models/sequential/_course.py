"""One model's run through the training loop: its data, network, generators and steps.

A :class:`Course` is what :func:`recaudit.models.sequential._train.train` needs of a model: the
mini-batches of an epoch and the loss of one of them. The base course trains on samples of
:class:`~recaudit.models.sequential._samples.SequenceData` with the full-softmax loss of the
model's ``instance_scores``; the cascade models (LatentCross over whole histories, JODIE)
subclass it, because their mini-batches are groups of the log in time order and a state runs on
from one group to the next.

What a course carries from one step of an epoch to the next (a recurrent state, the
trajectories of JODIE) lives in **one object**, the epoch's state: :meth:`Course.epoch` makes
it, the loop hands it to :meth:`Course.objective` and :meth:`Course.after_update`, and what an
objective computes for its update (the states after a group) comes back in
:attr:`Objective.carry`. Nothing passes between the two through attributes of the course.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import nn

from recaudit.data import Interactions, Queries
from recaudit.errors import DataError
from recaudit.metrics import score_ranks
from recaudit.models.sequential._nn import SequenceNet, materialize, set_dropout_generator

__all__ = ["Course", "Objective", "state_copy", "valid_metric"]


class Objective(NamedTuple):
    """One member's work at one step: the loss to differentiate, what it adds to the epoch's
    loss total, and what :meth:`Course.after_update` needs of it (``carry``)."""

    loss: torch.Tensor
    tally: torch.Tensor
    carry: Any = None


def state_copy(net: nn.Module) -> dict:
    """A detached copy of ``net``'s state (a checkpoint, or the best epoch's parameters)."""
    return {k: v.detach().clone() for k, v in net.state_dict().items()}


def valid_metric(scores: np.ndarray, target: np.ndarray, metric: str) -> float:
    """Mean reciprocal rank or NDCG@K (one relevant item: 1/log2(1 + rank) within K) of the
    targets; rank = 1 + the number of strictly higher scores (ties favour the target)."""
    if not len(target):
        return 0.0
    rank = 1 + score_ranks(scores, target)
    if metric == "mrr":
        return float(np.mean(1.0 / rank))
    k = int(metric[5:])
    return float(np.mean(np.where(rank <= k, 1.0 / np.log2(1.0 + rank), 0.0)))


class Course:
    """One model's run through the training loop (the base: samples in mini-batches of
    :class:`~recaudit.models.sequential._samples.SequenceData`, the full-softmax loss of the
    model's ``instance_scores``).

    ``model`` receives the learned state (``network_``, ``history_``, ``checkpoints_``, ...)
    when the course finishes; ``train`` is the training log (its last interaction per user is
    held out for validation when the model has ``patience``), ``seed`` the training seed.
    Subclasses (the cascade models' histories) override :meth:`_prepare`, :meth:`epoch`,
    :meth:`objective` and :meth:`after_update`.
    """

    #: the dtype of the per-epoch loss total (the mean loss of an epoch is ``total / n``)
    total_dtype: torch.dtype = torch.float64

    def __init__(self, model: Any, train: Interactions, seed: int,
                 device: torch.device) -> None:
        from recaudit.data import holdout_last

        # model: a SequentialRecommender (not imported: the model module imports this one)
        self.model, self.seed, self.device = model, seed, device
        self.config: Any = model.config
        self.name = model.registered_name
        self.valid_q: Queries | None = None
        if self.config.patience is not None:
            train, self.valid_q = holdout_last(train, min_length=3)
        self.train = train
        self.history: list[dict[str, Any]] = []
        self.checkpoints: list[tuple[float, dict]] = []
        self.best, self.stale = -1.0, 0
        self.best_state: dict | None = None
        self.stopped = False
        self.n = self._prepare()
        self.net = self._network()

    # ---------------------------------------------------------------- set up
    def _prepare(self) -> int:
        """Build the training data; returns the count an epoch's mean loss divides by."""
        self.data = self.model._make_data(self.train)
        if len(self.data) == 0:
            raise DataError(f"{self.name}: no user has two or more training interactions; "
                            "nothing to learn", source=self.train.name,
                            hint="use a log where users have several interactions (lower the "
                                 "dataset's min_user_interactions filter only if they do)")
        self.model.n_items_ = self.train.n_items
        return len(self.data)

    def _network(self) -> SequenceNet:
        """The network, initialised from the seed, with its dropout generator."""
        from recaudit.seeds import make_rng, make_torch_generator

        cfg, model = self.config, self.model
        net = materialize(model._network(self.train.n_items),
                          make_torch_generator(self.seed, self.name, "init"), self.device,
                          model._init_rule(), style=cfg.init)
        if cfg.freeze_embedding:
            net.embedding.weight.requires_grad_(False)
        self.dropout = make_torch_generator(self.seed, self.name, "dropout", device=self.device)
        set_dropout_generator(net, self.dropout)
        self.loss_rng = make_rng(self.seed, self.name, "loss")  # losses that draw (Cloze)
        return net

    def parameters(self) -> list[nn.Parameter]:
        """What the optimiser updates."""
        return [p for p in self.net.parameters() if p.requires_grad]

    def training_bytes(self) -> int:
        """An upper estimate of the memory this member needs while it trains, in bytes: its
        parameters four times (weights, gradients, Adam's two moments) and the largest
        mini-batch's activations (:meth:`_batch_bytes`)."""
        params = sum(p.numel() * p.element_size() for p in self.net.parameters())
        return 4 * params + self._batch_bytes()

    def _batch_bytes(self) -> int:
        """The activations of the largest mini-batch: the scores of its targets over the
        catalogue (kept with their softmax and gradient: 3 copies) and the trunk's
        ``[B, W, D]`` states (a generous 32 copies: layers, attention, their gradients)."""
        cfg = self.config
        width = cfg.max_len
        targets = cfg.batch_size * (width if self.data.layout == "window" else 1)
        hidden = max(cfg.embedding_dim, getattr(cfg, "hidden_dim", 0) or 0)
        return 4 * (3 * targets * self.train.n_items + 32 * cfg.batch_size * width * hidden)

    # ---------------------------------------------------------------- an epoch
    def epoch(self, epoch: int) -> tuple[Any, Iterator[Any]]:
        """The epoch's state (``None`` here: samples carry nothing from step to step) and its
        mini-batches, in order; the network is in training mode."""
        from recaudit.seeds import make_rng

        cfg = self.config
        self.net.train()
        order = self.data.order(cfg.batch_order, make_rng(self.seed, self.name, "order", epoch))
        return None, self.data.epoch_batches(order, cfg.batch_size, self.device,
                                             self.model.uses_time)

    def objective(self, state: Any, step: Any) -> Objective:
        """The loss of mini-batch ``step`` (``state``: the epoch's, :meth:`epoch`)."""
        loss = self.model.instance_scores(self.net, step, self.loss_rng)[0]
        return Objective(loss, loss.detach() * len(step))

    def after_update(self, state: Any, step: Any, carry: Any) -> None:
        """After the optimiser step: carry the objective's ``carry`` into ``state``."""

    @classmethod
    def objectives(cls, members: Sequence[tuple[Course, Any, Any]]) -> list[Objective]:
        """:meth:`objective` of several members at one step (each ``(course, state,
        step)``), in order: in one batched pass (:mod:`._stack`, bit-identical to computing
        them one by one) when the model says it batches in a stack, else one by one."""
        from recaudit.models.sequential import _stack

        first = members[0][0]
        if len(members) > 1 and first.model._batches_in_stack():
            return [Objective(*o) for o in _stack.stacked_objectives(
                first.model, [(c.net, step, c.loss_rng) for c, _, step in members])]
        return [c.objective(state, step) for c, state, step in members]

    # ---------------------------------------------------------------- epoch end, finish
    def validate(self) -> float:
        """The validation metric of the current parameters (``patience`` only)."""
        cfg = self.config
        self.model.network_ = self.net
        assert self.valid_q is not None
        return valid_metric(self.model._scores(self.valid_q, self.device), self.valid_q.target,
                            cfg.patience_metric)

    def finish(self, state: Any) -> None:
        """Hand the learned state to the model (after the best epoch's parameters are back;
        ``state``: the last epoch's, :meth:`epoch`)."""
        self.net.eval()
        set_dropout_generator(self.net, None)
        self.model.network_ = self.net
        self.model.device_ = self.device
