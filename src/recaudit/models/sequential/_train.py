"""The one training loop of the sequential models, for one model or a stack of them.

Every sequential model trains the same way: epochs of optimiser steps over mini-batches
(temporal or shuffled batches of samples, or groups of the log in time order), one Adam step
per mini-batch, an optional checkpoint every ``checkpoint_every`` epochs (TracIn), optional
early stopping on a held-out interaction per user (``patience``), a progress report per epoch.
What differs is the *step*: which mini-batches an epoch has and what a mini-batch's loss is. A
model supplies that as a :class:`Course` (one model's run through the loop: its network, data,
generators and per-step work); :func:`train` runs the courses.

**A stack** is several courses trained together by one loop: one trial each (its own
perturbed data, seed and draw), each with its own network, batches, dropout generator, loss
generator and Adam state, its own early stopping. At step ``j`` of an epoch every course that
still has a ``j``-th mini-batch contributes its loss; the losses are summed (the members share
no parameter, so each one's gradients are exactly those of its own loss) and one optimiser
step updates every member that had a batch (Adam skips parameters without a gradient: a member
with fewer batches this epoch, or one that stopped early, is left as it is). A model may
compute its members' losses in one batched computation (:meth:`Course.stacked_objectives`:
parameters stacked along a leading member dimension, one kernel for what would be one per
member); the default computes them one after another.

**A member's numbers never depend on its neighbours**: every member's loss, gradients and Adam
update are bit-identical to those of the same model trained alone (``stack = 1``), on the CPU
(tested for every model): the batched computations are arranged so that each member's slice
uses the arithmetic of its own unstacked computation (matrix products as batched products of
the same shapes, per-member reductions over its own rows, per-member dropout masks drawn from
its own generator in the order it would draw them alone).
"""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from recaudit import _progress as progress
from recaudit.data import Interactions, Queries
from recaudit.errors import DataError
from recaudit.metrics import score_ranks

if TYPE_CHECKING:
    from recaudit.models.sequential._base import SequentialRecommender
    from recaudit.models.sequential._nn import SequenceNet

__all__ = ["Course", "train", "state_copy", "valid_metric"]


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
    """One model's run through :func:`train` (the base: samples in mini-batches of
    :class:`~recaudit.models.sequential._samples.SequenceData`, the full-softmax loss of
    :meth:`SequentialRecommender.instance_scores`).

    ``model`` receives the learned state (``network_``, ``history_``, ``checkpoints_``, ...)
    when the course finishes; ``train`` is the training log (its last interaction per user is
    held out for validation when the model has ``patience``), ``seed`` the training seed.
    Subclasses (the cascade models' histories) override :meth:`_prepare`, :meth:`steps`,
    :meth:`objective` and the hooks.
    """

    #: the dtype of the per-epoch loss total (the mean loss of an epoch is ``total / n``)
    total_dtype: torch.dtype = torch.float64

    def __init__(self, model: SequentialRecommender, train: Interactions, seed: int,
                 device: torch.device) -> None:
        from recaudit.data import holdout_last

        self.model, self.seed, self.device = model, seed, device
        self.config = cfg = model.config
        self.name = model.registered_name
        self.valid_q: Queries | None = None
        if cfg.patience is not None:
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
        from recaudit.models.sequential._nn import materialize, set_dropout_generator
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
    def steps(self, epoch: int) -> Iterator[Any]:
        """The epoch's mini-batches, in order (the network is in training mode)."""
        from recaudit.seeds import make_rng

        cfg = self.config
        self.net.train()
        order = self.data.order(cfg.batch_order, make_rng(self.seed, self.name, "order", epoch))
        return self.data.epoch_batches(order, cfg.batch_size, self.device, self.model.uses_time)

    def objective(self, step: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """``(the loss to differentiate, what it adds to the epoch's loss total)``."""
        loss = self.model.instance_scores(self.net, step, self.loss_rng)[0]
        return loss, loss.detach() * len(step)

    def before_update(self, step: Any) -> None:
        """After the backward pass, before the optimiser step."""

    def after_update(self, step: Any) -> None:
        """After the optimiser step."""

    @classmethod
    def stacked_objectives(cls, members: Sequence[tuple[Course, Any]]
                           ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """:meth:`objective` of several members at one step (each ``(course, step)``), in
        order: in one batched pass (:mod:`._stack`, bit-identical to computing them one by
        one) when the network offers one and the model keeps the standard loss, else one by
        one."""
        from recaudit.models.sequential._stack import stacked_objectives

        course = members[0][0]
        if cls is Course and len(members) > 1 and getattr(course.net, "stackable", False) \
                and course.model.standard_loss():
            return stacked_objectives(members)
        return [c.objective(step) for c, step in members]

    # ---------------------------------------------------------------- epoch end, finish
    def validate(self) -> float:
        """The validation metric of the current parameters (``patience`` only)."""
        cfg = self.config
        self.model.network_ = self.net
        assert self.valid_q is not None
        return valid_metric(self.model._scores(self.valid_q, self.device), self.valid_q.target,
                            cfg.patience_metric)

    def finish(self) -> None:
        """Hand the learned state to the model (after the best epoch's parameters are back)."""
        from recaudit.models.sequential._nn import set_dropout_generator

        self.net.eval()
        set_dropout_generator(self.net, None)
        self.model.network_ = self.net
        self.model.device_ = self.device


def _end_epoch(course: Course, epoch: int, total: torch.Tensor, tic: float, cpu: float) -> None:
    cfg = course.config
    record: dict[str, Any] = {"epoch": epoch + 1, "loss": float(total) / course.n,
                              "seconds": time.perf_counter() - tic,
                              "cpu_seconds": time.process_time() - cpu}
    if cfg.checkpoint_every and (epoch + 1) % cfg.checkpoint_every == 0:
        course.checkpoints.append((cfg.lr, state_copy(course.net)))
    if course.valid_q is not None:
        value = course.validate()
        record[f"valid_{cfg.patience_metric}"] = value
        if value > course.best:
            course.best, course.best_state, course.stale = value, state_copy(course.net), 0
        else:
            course.stale += 1
    course.history.append(record)
    if course.valid_q is not None and course.stale >= cfg.patience:
        course.stopped = True


def train(courses: Sequence[Course]) -> None:
    """Train ``courses`` (one, or a stack of several of one model class and configuration)
    for their configured epochs; each gets its history, checkpoints and learned state.

    One Adam (``make_adam``: fused, deterministic) over every member's parameters: each
    parameter keeps its own moments and step count and is updated only at steps where its
    member had a batch. Runs under :func:`~recaudit.models.sequential._nn.deterministic_torch`
    with the members' ``num_threads`` on their device (they share both).
    """
    from recaudit.models.sequential._nn import deterministic_torch, make_adam

    if not courses:
        return
    first = courses[0]
    cfg = first.config
    if any(type(c) is not type(first) or c.config != cfg or c.device != first.device
           for c in courses):
        raise ValueError("a stack trains courses of one model class, configuration and device")
    with deterministic_torch(cfg.num_threads, first.device):
        opt = make_adam([p for c in courses for p in c.parameters()], cfg.lr,
                        cfg.weight_decay)
        for epoch in range(cfg.epochs):
            active = [c for c in courses if not c.stopped]
            if not active:
                break
            tic, cpu = time.perf_counter(), time.process_time()
            totals = {id(c): torch.zeros((), dtype=c.total_dtype, device=c.device)
                      for c in active}
            steps = [c.steps(epoch) for c in active]
            while True:
                members = [(c, s) for c, it in zip(active, steps, strict=True)
                           if (s := next(it, None)) is not None]
                if not members:
                    break
                objectives = type(first).stacked_objectives(members)
                opt.zero_grad(set_to_none=True)
                functools.reduce(operator.add, [o for o, _ in objectives]).backward()
                for c, s in members:
                    c.before_update(s)
                opt.step()
                for (c, s), (_, tally) in zip(members, objectives, strict=True):
                    totals[id(c)] += tally
                    c.after_update(s)
            for c in active:
                _end_epoch(c, epoch, totals[id(c)], tic, cpu)
            progress.epoch(epoch + 1, cfg.epochs)
        for c in courses:
            if c.best_state is not None:
                c.net.load_state_dict(c.best_state)
            c.finish()
            c.model.history_ = c.history
            c.model.checkpoints_ = c.checkpoints
