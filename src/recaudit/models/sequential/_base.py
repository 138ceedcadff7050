"""The shared machinery of the next-item sequential models (training loop, ranking, TracIn).

Every model here scores the catalogue as ``s = h W^T (+ b)`` where ``h`` is the encoder's
representation of the context at the position that predicts the next item and ``W`` the output
matrix (tied to the input item embedding in GRU4Rec, SASRec, TiSASRec, BERT4Rec). Training
minimises the full-softmax cross-entropy ``-log softmax(s)_y`` over the whole catalogue, averaged
over the targets of a mini-batch, with Adam.

Determinism (same data + same seed => bit-identical parameters and rank lists):

- the network is built on the meta device and initialised from
  ``make_torch_generator(seed, name, "init")`` (on the CPU, so a model starts from the same
  parameters on every device); dropout masks are hashes of counters keyed by
  ``derive_seed(seed, name, "dropout")``, the epoch and the step (:mod:`._draws`: the same
  masks on every device); shuffled batch orders from ``make_rng(seed, name, "order",
  epoch)``. Torch's global RNG is never read or written.
- ``torch.use_deterministic_algorithms(True)`` and ``num_threads`` intra-op threads (default 1;
  float sums depend on the thread count) hold inside ``fit``/``rank``/``score`` only.
  Results are bit-identical run to run on a given device and thread count; CPU and CUDA
  results differ in the last bits.
- a model is a stack of one (:mod:`._stack`): a trial computes the same bits alone and in a
  stack of any size on the CPU; ``implementation`` names the version of this arithmetic.

Speed (issue: paper-scale audits): a network returns its per-position *trunk* ``[K, B, L, D]``
and, optionally, a ``head(h)`` applied only to the positions that are scored (output dropout,
final dense layer or layer norm), so prefix samples pay for one position, not ``L``. A
stack's samples live on the training device and each epoch is planned once
(:mod:`._epochs`); the inner loop never synchronises with the host (the losses are summed on
the device; each member's total is read once per epoch).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import ConfigError, ModelError
from recaudit.models._device import resolve_device
from recaudit.models.sequential._nn import SequenceNet, deterministic_torch, required
from recaudit.models._params import Configurable
from recaudit.models._protocol import as_queries, rank_chunks
from recaudit.models.sequential._config import SequentialConfig
from recaudit.models.sequential._factors import collected, outer
from recaudit.models.sequential._course import Course
from recaudit.models.sequential._samples import (Batch, SequenceData, StackBatch,
                                                 batch_from_queries)
from recaudit.models.sequential._stack import Members, bmm_out, padded
from recaudit.models.sequential._train import train_stack, warm_train

__all__ = ["SequentialRecommender", "fit_stack"]


class SequentialRecommender(Configurable):
    """Base class: subclasses define ``Config`` and ``_network(n_items, k)`` (a network of
    ``k`` members, built on meta; a model alone is a stack of one, :mod:`._stack`).

    The network's ``forward(batch, members) -> [K, B, L, D]`` returns each member's
    representation at every position (causal: position ``j`` sees positions ``<= j`` only);
    ``output(members) -> (W [K, n_items, D], b [K, n_items] | None)``.
    Learned state after ``fit``: ``network_``, ``n_items_``, ``checkpoints_``, ``history_`` (one
    dict per epoch: loss, wall and process-CPU seconds, valid_mrr with ``patience``).
    """

    Config: ClassVar[type[SequentialConfig]] = SequentialConfig
    registered_name: ClassVar[str] = "sequential"
    uses_time: ClassVar[bool] = False
    #: the version of the model's arithmetic: raised when what a trial computes changes in
    #: its bits (stores record it with every trial, :meth:`implementation_of`, and cache a
    #: baseline per version). 2: one forward for a model and a stack (dropout masks from the
    #: counter-based generator, layer norms' affine map apart, targets padded to multiples
    #: of 64, losses of a stack in one operation).
    implementation: ClassVar[int] = 2
    # learned state (set by the training loop, :mod:`._train`)
    n_items_: int
    device_: torch.device
    history_: list[dict[str, Any]]
    checkpoints_: list[tuple[float, dict]]
    #: the wall seconds a resumed fit took before this process resumed it (0.0: not resumed;
    #: :mod:`._resume`)
    resumed_seconds_: float

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.network_: SequenceNet | None = None
        if self.config.pad_left and self.uses_time:
            raise ConfigError(f"{type(self).__name__} reads time gaps between context items; "
                              "pad_left (a fixed window padded on the left) is for models "
                              "without time features")

    @classmethod
    def implementation_of(cls, params: dict[str, Any], device: torch.device) -> str:
        """What a trial of this model with ``params`` computes on ``device``, as its record
        says it (``versions.implementation``): the version of the arithmetic and, for a model
        with a recurrence, which one runs (``recurrence = "auto"`` resolved)."""
        from recaudit.models.sequential._stack import resolve_recurrence

        recurrence = params.get("recurrence", getattr(cls.Config, "recurrence", None))
        if recurrence is None:
            return str(cls.implementation)
        return f"{cls.implementation} (recurrence {resolve_recurrence(recurrence, device)})"

    # ------------------------------------------------------------------ hooks
    def _network(self, n_items: int, k: int = 1) -> SequenceNet:  # pragma: no cover
        """The network of ``k`` members over ``n_items`` items, built on the meta device."""
        raise NotImplementedError

    def _make_data(self, train: Interactions) -> SequenceData:
        cfg = self.config
        return SequenceData(train, cfg.max_len, cfg.samples, first_samples=cfg.first_samples,
                            pad_left=cfg.pad_left)

    def _init_rule(self):
        """Optional ``rule(name, shape, g)`` overriding the default initialisation."""
        return None

    def instance_scores(self, net: SequenceNet, batch: Batch, rng: np.random.Generator
                        ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss, scores)`` of a training mini-batch of a model's network (a stack of one):
        the training loss (mean full-softmax cross-entropy over the batch's targets,
        ``batch.sel``) and the next-item scores ``[n, n_items]`` of its instances — every
        target position, in ``batch.sel`` order. ``rng``: the fit's loss generator (for losses
        that draw, BERT4Rec's Cloze masks).

        The training loop minimises the loss; fine-tuning methods (FINEST,
        :mod:`recaudit.stabilise`) add terms on the scores. A model whose training objective
        is not next-item prediction overrides :meth:`_objectives` and :meth:`_instances`.
        """
        n = len(required(batch.sel, "targets"))
        stacked = StackBatch.of([batch], padded(n))
        losses, scores = self._next_items(net, stacked, Members.of(net))
        return losses[0], scores[0, :n]

    def _objectives(self, net: SequenceNet, batch: StackBatch, m: Members,
                    rngs: Sequence[np.random.Generator]) -> torch.Tensor:
        """Each member's loss ``[K]`` in a pass over the stacked mini-batch ``batch`` (members
        ``m``, their loss generators ``rngs``): the mean full-softmax cross-entropy over its
        own targets."""
        return self._next_items(net, batch, m)[0]

    def _next_items(self, net: SequenceNet, batch: StackBatch, m: Members
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        if batch.sel is None or batch.sel_targets is None:
            raise ValueError("this batch carries no targets; build it with SequenceData")
        return self._scored(net, net(batch, m), batch.sel, batch.sel_targets, m)

    def _scored(self, net: SequenceNet, trunk: torch.Tensor, sel: torch.Tensor,
                targets: torch.Tensor, m: Members) -> tuple[torch.Tensor, torch.Tensor]:
        """Losses ``[K]`` and scores ``[K, R, n_items]`` of the trunk ``[K, B, W, D]`` at each
        member's positions ``sel [K, R]`` (flat ``b W + j``), targets ``[K, R]`` (``-100``:
        padding, :func:`._stack.padded`): one batched head and output layer, one
        cross-entropy, each member's mean over its own rows."""
        k, b, w, d = trunk.shape
        idx = sel if k == 1 else sel + (torch.arange(k, device=sel.device) * (b * w))[:, None]
        h = trunk.reshape(k * b * w, d).index_select(0, idx.view(-1)).view(k, -1, d)
        scores = self._logits(net, _head(net, h, m), m)
        ce = nn.functional.cross_entropy(scores.view(-1, scores.shape[-1]), targets.view(-1),
                                         reduction="none").view(k, -1)
        return ce.sum(1) / (targets >= 0).sum(1), scores

    def query_scores(self, net: SequenceNet, batch: Batch) -> torch.Tensor:
        """Scores ``[B, n_items]`` of the next item after each row's context (``net``, a
        stack of one, in evaluation mode gives what :meth:`rank` ranks by)."""
        return self._logits(net, self._query_hidden(net, batch))

    @staticmethod
    def _logits(net: SequenceNet, h: torch.Tensor, m: Members | None = None) -> torch.Tensor:
        """Scores ``h W^T (+ b)`` of members ``m`` (``h [K, n, D]``), or of a stack of one's
        only member (``h [n, D]``)."""
        if h.dim() == 2:
            return bmm_out(h.unsqueeze(0), *net.output(Members.of(net)))[0]
        return bmm_out(h, *net.output(m if m is not None else Members.of(net)))

    def _query_hidden(self, net: SequenceNet, batch: Batch) -> torch.Tensor:
        """Representation ``[B, D]`` that predicts the item after each row's context (``net``:
        a stack of one)."""
        m = Members.of(net)
        hidden = net(StackBatch.of([batch]), m)[0]
        h = hidden[torch.arange(len(batch), device=hidden.device), batch.lengths - 1]
        return _head(net, h.unsqueeze(0), m)[0]

    # ------------------------------------------------------------------ fit
    @staticmethod
    def _check_fit_args(train: Interactions, seed: int) -> int:
        """Validate ``fit``'s arguments; numpy integer seeds become Python ints (same model)."""
        if not isinstance(train, Interactions):
            raise TypeError(f"train must be Interactions, got {type(train).__name__}")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        return int(seed)

    def _course(self, train: Interactions, seed: int, device: torch.device) -> Course:
        """This model's run through the training loop (:mod:`._train`)."""
        return Course(self, train, seed, device)

    def fit(self, train: Interactions, *, seed: int) -> SequentialRecommender:
        """Train from scratch on ``train``; all randomness derives from ``seed``."""
        fit_stack([self], [train], [seed])
        return self

    @property
    def warm_startable(self) -> bool:
        """Whether :meth:`warm_start` applies: the model trains on samples with the plain
        next-item loss (``lstm``, ``gru4rec``, ``sasrec``, ``tisasrec``); BERT4Rec's Cloze
        loss and the models with courses of their own (``latentcross``, ``jodie``) do not
        declare it."""
        cls, base = type(self), SequentialRecommender
        return all(getattr(cls, a) is getattr(base, a)
                   for a in ("_course", "instance_scores", "_objectives", "_make_data"))

    def warm_start(self, previous: SequentialRecommender, train: Interactions, *,
                   new_from: int, seed: int, epochs: int = 1,
                   lr: float | None = None) -> SequentialRecommender:
        """Continue ``previous`` (a fitted model of this class and configuration, the older
        fit) on the new part of ``train``: the targets at log rows ``new_from`` and after,
        their contexts from the whole log, for ``epochs`` epochs with a fresh Adam at ``lr``
        (the model's ``lr`` when ``None``); ``previous`` is left as it is
        (:func:`recaudit.models.sequential._train.warm_train`). Deterministic: the same
        previous fit, log, ``new_from`` and seed give bit-identical rank lists. Returns
        ``self``, fitted (its ``history_``: the previous fit's epochs, then the warm ones)."""
        seed = self._check_fit_args(train, seed)
        if not self.warm_startable:
            raise ModelError(f"{type(self).__name__} does not declare a warm start (its "
                             "training is not the plain next-item loss over samples)")
        if type(previous) is not type(self) or previous.config != self.config:
            raise ModelError("a warm start continues a fit of the same class and "
                             f"configuration: got {type(previous).__name__}({previous.config})"
                             f" for {type(self).__name__}({self.config})")
        previous._fitted()
        if train.n_items != previous.n_items_ or not 0 <= new_from < len(train):
            raise ModelError(f"a warm start needs the previous fit's catalogue "
                             f"({previous.n_items_} items; the log has {train.n_items}) and a "
                             f"window start inside the log (0 <= new_from < {len(train)}, got "
                             f"{new_from})")
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise ModelError(f"warm start epochs must be an integer >= 1, got {epochs!r}")
        if lr is not None and not lr > 0:
            raise ModelError(f"warm start lr must be > 0, got {lr!r}")
        tuned = warm_train(self, previous, train, new_from, seed, epochs, lr)
        self.n_items_, self.device_ = previous.n_items_, previous.device_
        self.history_ = [*previous.history_, *tuned]
        self.checkpoints_ = []
        self.resumed_seconds_ = 0.0
        return self

    # ------------------------------------------------------------------ rank
    def _check_fitted(self) -> None:
        self._fitted()

    @property
    def network(self) -> SequenceNet:
        """The trained network (an error that says so before ``fit``): what fine-tuning
        methods continue to train (:mod:`recaudit.stabilise`)."""
        return self._fitted()

    def _fitted(self) -> SequenceNet:
        """The trained network (an error that says so before ``fit``)."""
        if self.network_ is None:
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit(train, seed=...)")
        return self.network_

    def _scores(self, queries: Queries, device: torch.device, chunk: int | None = None
                ) -> np.ndarray:
        """Scores ``[n_queries, n_items]`` (float32) under the fitted network in evaluation
        mode, ``chunk`` queries at a time (:meth:`_chunk_size` when ``None``)."""
        net = self._fitted()
        net.eval()
        chunk = chunk or self._chunk_size(device)
        out = np.empty((len(queries), self.n_items_), dtype=np.float32)
        with torch.no_grad():
            for lo in range(0, len(queries), chunk):
                sub = queries if len(queries) <= chunk else \
                    queries.subset(np.arange(lo, min(lo + chunk, len(queries))))
                out[lo:lo + len(sub)] = self._chunk_scores(net, sub, device).float().cpu().numpy()
        return out

    def _chunk_size(self, device: torch.device) -> int:
        """Queries scored at a time. CPU: small chunks stay in cache (measured: 512 is 3x
        faster than 15k at once for TiSASRec); GPU: large chunks, at most ~256 MB of scores
        each."""
        if device.type == "cpu":
            return 512
        return max(512, min(8192, (64 << 20) // max(self.n_items_, 1)))

    def _chunk_scores(self, net: SequenceNet, queries: Queries, device: torch.device
                      ) -> torch.Tensor:
        """Scores ``[len(queries), n_items]`` of one chunk of queries (``no_grad``)."""
        batch = batch_from_queries(queries, self.config.max_len, device, self.uses_time,
                                   pad_left=self.config.pad_left)
        return self.query_scores(net, batch)

    def score(self, queries: Queries | Interactions) -> np.ndarray:
        """Scores ``[n_queries, n_items]`` (float32) of every catalogue item for each query."""
        self._check_fitted()
        q = self._as_queries(queries)
        with deterministic_torch(self.config.num_threads, self.device_, fill_uninitialized=False):
            return self._scores(q, self.device_)

    def _as_queries(self, queries: Queries | Interactions) -> Queries:
        q = as_queries(queries, max_len=self.config.max_len)
        if q.n_items != self.n_items_:
            raise ValueError(f"queries have a catalogue of {q.n_items} items but the model was "
                             f"trained on {self.n_items_}; build queries from the same log")
        return q

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists:
        """Rank the catalogue for each query (best first, ties by lower item code): the top
        ``k`` of each chunk of queries' scores is kept as the chunk is scored
        (:func:`~recaudit.models.rank_chunks`), so memory holds one chunk's scores, not every
        query's; the lists are those of :meth:`score` ranked whole."""
        if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer))
                              or k < 1):
            raise ValueError(f"k must be None or an integer >= 1, got {k!r}")
        self._check_fitted()
        q = self._as_queries(queries)
        device = self.device_
        chunk = self._chunk_size(device)

        def scored() -> Iterator[np.ndarray]:
            for lo in range(0, len(q), chunk):
                sub = q if len(q) <= chunk else q.subset(np.arange(lo, min(lo + chunk, len(q))))
                s = self._scores(sub, device, chunk)   # one chunk: as score() computes it
                if self.config.exclude_seen:
                    s[np.repeat(np.arange(len(sub)), sub.lengths()), sub.context_item] = -np.inf
                yield s
                del s   # ranked: dropped before the next chunk is scored

        with deterministic_torch(self.config.num_threads, device, fill_uninitialized=False):
            return rank_chunks(scored(), k, len(q))

    # ------------------------------------------------------------------ TracIn
    def checkpoint_factor_stream(self, train: Interactions, rows: np.ndarray, queries: Queries,
                                 chunk_size: int = 4096) -> Iterator[tuple]:
        """The two factors of every per-example output-layer gradient, checkpoint by checkpoint.

        Yields ``(lr, (D_test, H_test), has_bias, chunks)`` per checkpoint saved with
        ``checkpoint_every``; ``chunks`` yields ``(row ids, (D, H))`` for ``rows`` in chunks of
        ``chunk_size``, in the order given (consume them before the next checkpoint). ``H``
        ``[n, D]`` are the representations feeding the output layer and
        ``D = softmax(H W^T + b) - e_y`` ``[n, n_items]`` (float32). The gradient of example
        ``a`` is ``dl/dW = D_a^T H_a``, ``dl/db = D_a`` (see :meth:`checkpoint_gradients`), so
        ``G_a . G_b = (D_a . D_b)(H_a . H_b) (+ D_a . D_b)`` and TracIn needs only these
        factors: memory ``n * (n_items + D)`` instead of ``n * n_items * D``. Training example
        ``r`` predicts ``train.item[r]`` from the user's preceding items in ``train`` (up to
        ``max_len``); test example ``q`` predicts ``queries.target[q]`` from its context; ``H``
        comes from the checkpoint's network in evaluation mode (no dropout). The queries'
        factors are computed once per checkpoint.
        """
        fitted, q = self._tracin_inputs(queries)
        rows = np.asarray(rows, dtype=np.int64)
        data = SequenceData(train, self.config.max_len, "prefix", pad_left=self.config.pad_left)
        device = self.device_
        with deterministic_torch(self.config.num_threads, device, fill_uninitialized=False):
            net = copy.deepcopy(fitted)
            for lr, state in self.checkpoints_:
                net.load_state_dict(state)
                net.eval()
                with torch.no_grad():
                    qb = batch_from_queries(q, self.config.max_len, device, self.uses_time,
                                            pad_left=self.config.pad_left)
                    f_test = self._factors(net, self._query_hidden(net, qb),
                                           torch.from_numpy(q.target.astype(np.int64)).to(device))
                yield (lr, f_test, net.output(Members.of(net))[1] is not None,
                       self._prefix_chunks(net, data, rows, chunk_size, device))

    def _tracin_inputs(self, queries: Queries) -> tuple[Any, Queries]:
        """The fitted network and the checked queries of a TracIn computation."""
        fitted = self._fitted()
        if not self.checkpoints_:
            raise ValueError("no checkpoints: fit with checkpoint_every=N to record them")
        q = self._as_queries(queries)
        if (q.target < 0).any():
            raise ValueError("every query needs a known target for its loss gradient")
        return fitted, q

    def _prefix_chunks(self, net: SequenceNet, data: SequenceData, rows: np.ndarray,
                       chunk_size: int, device) -> Iterator[tuple[np.ndarray, tuple]]:
        for lo in range(0, len(rows), chunk_size):
            part = rows[lo:lo + chunk_size]
            with torch.no_grad():  # (never across a yield: grad mode is the caller's too)
                tb = data.prefix_batch_for_rows(part, device, self.uses_time)
                targets = required(tb.targets, "targets")
                f = self._factors(net, self._query_hidden(net, tb),
                                  targets[torch.arange(len(tb)), tb.lengths - 1])
            yield part, f

    def checkpoint_factors(self, train: Interactions, rows: np.ndarray, queries: Queries,
                           ) -> Iterator[tuple[float, tuple, tuple, bool]]:
        """``(lr, factors of rows, factors of the queries, has_bias)`` per checkpoint: the
        arrays of :meth:`checkpoint_factor_stream`, ``rows`` in the order given."""
        return collected(self.checkpoint_factor_stream, train, rows, queries)

    def checkpoint_gradients(self, train: Interactions, rows: np.ndarray, queries: Queries,
                             ) -> Iterator[tuple[float, np.ndarray, np.ndarray]]:
        """Per-example gradients of the loss w.r.t. the output layer at each checkpoint.

        Yields ``(lr, G_train [len(rows), P], G_test [len(queries), P])`` per checkpoint saved
        with ``checkpoint_every``. The loss of an example with representation ``h`` and target
        ``y`` is ``l = -log softmax(h W^T + b)_y``; its gradient w.r.t. the output layer is the
        closed form ``dl/dW = (p - e_y) h^T``, ``dl/db = p - e_y`` with ``p = softmax(s)``,
        flattened as ``[W.ravel(), b]`` (``P = n_items * D (+ n_items)``). Memory is
        ``(len(rows) + len(queries)) * P`` float32 per checkpoint; TracIn itself uses the
        factored form (:meth:`checkpoint_factor_stream`), which never builds these matrices.
        """
        for lr, (d_tr, h_tr), (d_te, h_te), bias in self.checkpoint_factors(train, rows,
                                                                            queries):
            yield lr, outer(d_tr, h_tr, bias), outer(d_te, h_te, bias)

    def _factors(self, net: SequenceNet, h: torch.Tensor, y: torch.Tensor
                 ) -> tuple[np.ndarray, np.ndarray]:
        p = self._logits(net, h).softmax(-1)
        p[torch.arange(len(y)), y] -= 1.0
        return p.float().cpu().numpy(), h.float().cpu().numpy()


def _head(net: nn.Module, h: torch.Tensor, m: Members) -> torch.Tensor:
    """The network's per-position head (``net.head``) of members ``m``, applied to selected
    positions only (``h [K, n, D]``)."""
    head = getattr(net, "head", None)
    return h if head is None else head(h, m)


def fit_stack(models: Sequence[SequentialRecommender], trains: Sequence[Interactions],
              seeds: Sequence[int], *, memory: int | None = None
              ) -> list[SequentialRecommender]:
    """Train ``models[i]`` on ``trains[i]`` with seed ``seeds[i]``, all together as one stack
    (:mod:`recaudit.models.sequential._train`): one training loop, each model with its own
    data, batches, generators, optimiser state and early stopping. Each model ends exactly as
    ``models[i].fit(trains[i], seed=seeds[i])`` would leave it (bit for bit on the CPU); the
    models must be of one class with one configuration (their ``device`` included).

    Memory: before training, each member's need is estimated (``Course.training_bytes``:
    parameters, gradients, Adam's moments and the largest mini-batch's activations) against
    what the device has free (``memory`` bytes if given; CUDA: ``torch.cuda.mem_get_info``;
    CPU: the system's available memory); a stack that would not fit in 80 % of it is split
    into smaller stacks, with a warning that says so. A stack that runs out of GPU memory all
    the same is split in halves and trained again (the members' numbers do not depend on
    their neighbours, so nothing changes but the time; inside
    :func:`~recaudit.models.sequential.resumable`, the state the whole stack kept is removed
    once its halves are trained); one model alone that does not fit
    raises :class:`~recaudit.errors.RecauditError` with what to change. Returns the models,
    fitted."""
    models, trains, seeds = list(models), list(trains), list(seeds)
    if not (len(models) == len(trains) == len(seeds)):
        raise ValueError(f"fit_stack needs one training log and one seed per model, got "
                         f"{len(models)} models, {len(trains)} logs, {len(seeds)} seeds")
    if not models:
        return []
    first = models[0]
    for m in models:
        if not isinstance(m, SequentialRecommender):
            raise TypeError(f"fit_stack trains sequential models, got {type(m).__name__}")
        if type(m) is not type(first) or m.config != first.config:
            raise ValueError("a stack trains models of one class and configuration: "
                             f"{type(first).__name__}({first.config}) and "
                             f"{type(m).__name__}({m.config})")
    if len({id(m) for m in models}) != len(models):
        raise ValueError("fit_stack got the same model object twice; give each member its own")
    seeds = [m._check_fit_args(t, s) for m, t, s in zip(models, trains, seeds, strict=True)]
    return train_stack(list(zip(models, trains, seeds, strict=True)),
                       resolve_device(first.config.device), memory)
