"""One model's run through the training loop: its data, network, generators and steps.

A :class:`Course` is what :func:`recaudit.models.sequential._train.train` needs of a model: the
mini-batches of an epoch and the loss of one of them. The base course trains on samples of
:class:`~recaudit.models.sequential._samples.SequenceData` with the full-softmax loss of the
model's ``_objectives``; the cascade models (LatentCross over whole histories, JODIE)
subclass it, because their mini-batches are groups of the log in time order and a state runs on
from one group to the next.

What a course carries from one step of an epoch to the next (a recurrent state, the
trajectories of JODIE) lives in **one object**, the epoch's state: :meth:`Course.epoch` makes
it, the loop hands it to :meth:`Course.objective` and :meth:`Course.after_update`, and what an
objective computes for its update (the states after a group) comes back in
:attr:`StepLosses.carries`. Nothing passes between the two through attributes of the course.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from recaudit.data import Interactions, Queries
from recaudit.errors import DataError
from recaudit.metrics import score_ranks
from recaudit.models.sequential._draws import fold
from recaudit.models.sequential._nn import SequenceNet, materialize
from recaudit.models.sequential._samples import StackBatch
from recaudit.models.sequential._stack import Members, padded

__all__ = ["Course", "StepLosses", "valid_metric"]


@dataclass
class StepLosses:
    """The members' work at one step: their losses ``[n]`` (summed and differentiated), their
    stack positions in that order (``members``), what each adds to its epoch's loss total
    (``tallies [n]``) and what :meth:`Course.after_update` needs of each (``carries``, by
    stack position)."""

    losses: torch.Tensor
    members: list[int]
    tallies: torch.Tensor
    carries: dict[int, Any] = field(default_factory=dict)


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
    model's ``_objectives``).

    ``model`` receives the learned state (``network_``, ``history_``, ``checkpoints_``, ...)
    when the course finishes; ``train`` is the training log (its last interaction per user is
    held out for validation when the model has ``patience``), ``seed`` the training seed. The
    courses of a stack share one network (:meth:`network`), member ``member`` of it each.
    Subclasses (the cascade models' histories) override :meth:`_prepare`, :meth:`epoch`,
    :meth:`objectives` and :meth:`after_update`.
    """

    #: the dtype of the per-epoch loss total (the mean loss of an epoch is ``total / n``)
    total_dtype: torch.dtype = torch.float64

    def __init__(self, model: Any, train: Interactions, seed: int,
                 device: torch.device) -> None:
        from recaudit.data import holdout_last
        from recaudit.seeds import derive_seed, make_rng

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
        self.dropout_key = fold(derive_seed(seed, self.name, "dropout"))
        self.loss_rng = make_rng(seed, self.name, "loss")  # losses that draw (Cloze)
        self.net: SequenceNet | None = None   # the stack's network, once built
        self.member = 0

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

    def _meta_network(self, k: int) -> SequenceNet:
        """The network of ``k`` members like this one, on the meta device."""
        return self.model._network(self.train.n_items, k)

    def _init_rule(self) -> Any:
        return self.model._init_rule()

    @classmethod
    def network(cls, courses: Sequence[Course]) -> SequenceNet:
        """The stack's network: member ``k`` initialised from course ``k``'s seed, with its
        dropout key (:mod:`._draws`); each course learns its member (``net``, ``member``)."""
        from recaudit.seeds import make_torch_generator

        first = courses[0]
        cfg = first.config
        net = materialize(first._meta_network(len(courses)),
                          [make_torch_generator(c.seed, c.name, "init") for c in courses],
                          first.device, first._init_rule(), style=cfg.init)
        if cfg.freeze_embedding:
            net.embedding.weight.requires_grad_(False)
        net.dropout_keys = torch.tensor([c.dropout_key for c in courses], dtype=torch.int32,
                                        device=first.device)
        for k, c in enumerate(courses):
            c.net, c.member = net, k
        return net

    def training_bytes(self) -> int:
        """An upper estimate of the memory this member needs while it trains, in bytes: its
        parameters four times (weights, gradients, Adam's two moments) and the largest
        mini-batch's activations (:meth:`_batch_bytes`)."""
        params = sum(p.numel() * 4 for p in self._meta_network(1).parameters())
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
        mini-batches, in order."""
        from recaudit.seeds import make_rng

        cfg = self.config
        order = self.data.order(cfg.batch_order, make_rng(self.seed, self.name, "order", epoch))
        return None, self.data.epoch_batches(order, cfg.batch_size, self.device,
                                             self.model.uses_time)

    @classmethod
    def objectives(cls, net: SequenceNet, members: Sequence[tuple[Course, Any, Any]],
                   tag: int) -> StepLosses:
        """The losses of the members ``(course, state, step)`` that train at one step
        (``tag``: the step's, for the dropout keys): members whose mini-batches share a shape
        and a padded number of targets (:func:`._stack.padded`) as one pass of the stacked
        network (the model's ``_objectives``), or member by member when the model says it
        does not batch (its ``_batches_in_stack``)."""
        model = members[0][0].model
        groups: dict[Any, list[int]] = {}
        for i, (_, _, step) in enumerate(members):
            key = (tuple(step.items.shape), padded(len(step.sel))) \
                if model._batches_in_stack() else (None, i)
            groups.setdefault(key, []).append(i)
        losses, order, tallies = [], [], []
        for (_, rows), idx in groups.items():
            positions = [members[i][0].member for i in idx]
            batch = StackBatch.of([members[i][2] for i in idx], rows)
            loss = model._objectives(net, batch, Members.step(net, positions, tag),
                                     [members[i][0].loss_rng for i in idx])
            losses.append(loss)
            tallies.append(loss.detach() * len(batch))
            order += positions
        cat = (lambda t: t[0]) if len(losses) == 1 else torch.cat
        return StepLosses(cat(losses), order, cat(tallies))

    def after_update(self, state: Any, step: Any, carry: Any) -> None:
        """After the optimiser step: carry the objective's ``carry`` into ``state``."""

    # ---------------------------------------------------------------- epoch end, finish
    def member_network(self, share: bool = True) -> SequenceNet:
        """This course's member of the stack as a network of its own (``share``: views)."""
        assert self.net is not None
        return self.net.member(self.member, share=share)

    def validate(self) -> float:
        """The validation metric of the current parameters (``patience`` only)."""
        cfg = self.config
        self.model.network_ = self.member_network()
        assert self.valid_q is not None
        return valid_metric(self.model._scores(self.valid_q, self.device), self.valid_q.target,
                            cfg.patience_metric)

    def finish(self, state: Any) -> None:
        """Hand the learned state to the model (after the best epoch's parameters are back;
        ``state``: the last epoch's, :meth:`epoch`): its member of the stack, copied."""
        net = self.member_network(share=False)
        net.eval()
        self.model.network_ = net
        self.model.device_ = self.device
