"""One model's run through the training loop (a :class:`Course`), and a stack's epochs.

A :class:`Course` is one trial's run: its log, samples, seed, dropout key and loss generator,
history, checkpoints and early stopping. The courses of a stack share one network and, for the
sample models, one store of their samples on the device (a :class:`Stack`). An *epoch* of a
stack (:meth:`Course.epoch`) is one object that plans the epoch, yields its steps, computes the
losses of the members that train at a step and carries what a step leaves for the next: the
base course's :class:`SampleEpoch` (mini-batches of samples, planned once per epoch on the
device, :mod:`._epochs`), and the epochs of the courses whose mini-batches are groups of the
log in time order with a state running on from one group to the next, which take the members'
groups of a step together (LatentCross over whole histories: :mod:`._latentcross._histories`;
JODIE: :mod:`._jodie._steps`).

What passes from one step of an epoch to the next (a recurrent state, JODIE's trajectories)
lives in the epoch object: the objectives return what the update needs of it
(:attr:`StepLosses.carries`) and the epoch's ``after_update`` carries it into the state.
Nothing passes between them through attributes of the course.
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
from recaudit.models.sequential._epochs import Group, StackData
from recaudit.models.sequential._nn import SequenceNet, materialize
from recaudit.models.sequential._stack import Members

__all__ = ["Course", "Stack", "StepLosses", "SampleEpoch", "valid_metric"]


@dataclass
class Stack:
    """The courses of a stack (member ``k`` is ``courses[k]``), their network and, for the
    sample models, their samples on the device."""

    courses: list[Course]
    net: SequenceNet
    data: Any = None


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
    Subclasses (the cascade models' courses) override :meth:`_prepare`, :meth:`stack` and
    :meth:`epoch`, whose epoch object supplies the step's ``objectives`` and
    ``after_update``.
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

    @classmethod
    def stack(cls, courses: Sequence[Course]) -> Stack:
        """The stack of ``courses``: their network (:meth:`network`) and their samples on
        the device (:class:`._epochs.StackData`)."""
        net = cls.network(courses)
        first = courses[0]
        data = StackData([c.data for c in courses], first.device, first.model.uses_time)
        return Stack(list(courses), net, data)

    # ---------------------------------------------------------------- an epoch
    @classmethod
    def epoch(cls, stack: Stack, active: Sequence[Course], epoch: int) -> Any:
        """Epoch ``epoch`` of the ``active`` members of ``stack`` (an epoch object: its
        steps, their losses, their updates; see the module docstring)."""
        return SampleEpoch(stack, active, epoch)

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


class SampleEpoch:
    """An epoch of the sample models' stack: each member's mini-batches in its own order,
    planned once (:meth:`._epochs.StackData.plan`); at a step, members whose mini-batches
    share a shape and a padded number of targets run as one pass of the network (the model's
    ``_objectives``)."""

    def __init__(self, stack: Stack, active: Sequence[Course], epoch: int) -> None:
        from recaudit.seeds import make_rng

        self.stack = stack
        cfg = active[0].config
        orders = {c.member: c.data.order(cfg.batch_order,
                                         make_rng(c.seed, c.name, "order", epoch))
                  for c in active}
        self.plan = stack.data.plan(orders, cfg.batch_size)

    def __iter__(self) -> Iterator[list[Group]]:
        return iter(self.plan.steps)

    def objectives(self, step: list[Group], tag: int) -> StepLosses:
        """The losses of the members of ``step`` (``tag``: the step's, for dropout keys)."""
        stack = self.stack
        model = stack.courses[0].model
        losses, tallies = [], []
        order: list[int] = []
        for group in step:
            batch = stack.data.batch(self.plan, group)
            loss = model._objectives(stack.net, batch, Members.step(stack.net, group.members,
                                                                     tag),
                                     [stack.courses[k].loss_rng for k in group.members])
            losses.append(loss)
            tallies.append(loss.detach() * group.rows)
            order += group.members
        cat = (lambda t: t[0]) if len(losses) == 1 else torch.cat
        return StepLosses(cat(losses), order, cat(tallies))

    def after_update(self, step: list[Group], losses: StepLosses) -> None:
        """Samples carry nothing from one step to the next."""

    def state(self, course: Course) -> None:
        return None

