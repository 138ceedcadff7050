"""The options of the next-item sequential models: those they share
(:class:`SequentialConfig`) and each model's own (``GRU4RecConfig``, ...).

They live apart from the networks, without torch: a configuration names a model and its
parameters, and both are checked (:meth:`recaudit.experiment.ModelSpec.validate`) before
anything that trains one is imported."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

import numpy as np

from recaudit.config import Config
from recaudit.errors import ConfigError

__all__ = ["BERT4RecConfig", "GRU4RecConfig", "JODIEConfig", "LSTMConfig", "LatentCrossConfig",
           "RecurrentConfig", "SASRecConfig", "SequentialConfig", "TiSASRecConfig"]


@dataclass(frozen=True)
class SequentialConfig(Config):
    """Options shared by the sequential models (defaults: Oh et al. 2022 §5).

    epochs: training epochs (Oh et al. 2022: at most 50). lr: Adam learning rate (0.001).
    embedding_dim: item embedding size (128). max_len: context length (50).
    batch_size: samples per mini-batch. batch_order: ``"shuffled"`` or ``"temporal"``
    (Oh et al. 2022 §6.1). samples: ``"window"`` (default; every position of a window of up to
    ``max_len`` items predicts its next item: the training scheme of SASRec, GRU4Rec's
    session-parallel batches and the CASPER LSTM, ~max_len times cheaper) or ``"prefix"`` (one
    sample per target with its preceding ``max_len`` items, RecBole's and CASPER's scheme).
    Both cover every target exactly once per epoch (see ``_samples``).
    dropout: dropout probability. weight_decay: Adam L2 coefficient.
    exclude_seen: drop the query's context items from rank lists. Default False: repeat
    consumption is common in next-item data (LastFM, Wikipedia, Reddit), so the item just
    consumed is a legitimate answer. With ``k=None`` and exclusion, lists are cut to the
    shortest row (rank lists are rectangular).
    patience: if set, hold out each user's last training interaction (users with >= 3), train
    on the rest, stop when the validation ``patience_metric`` has not improved for
    ``patience`` epochs and keep the best epoch's parameters.
    patience_metric: ``"mrr"`` or ``"ndcg@K"`` of the held-out interactions.
    device: ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or ``"auto"``. num_threads: torch intra-op
    threads. checkpoint_every: keep the network state every this many epochs for TracIn.
    first_samples: (prefix samples only) also predict each user's first interaction from an
    empty context, as CASPER's released LSTM does (see ``_samples``).
    pad_left: (prefix samples only) right-align every context in ``max_len`` columns padded on
    the left and let the encoder read the padding, as CASPER's released LSTM does.
    init: ``"default"`` (recaudit's: Xavier-uniform matrices, zero biases, N(0, 1/d)
    embeddings, model-specific rules) or ``"torch"`` (PyTorch's own defaults: U(±1/√fan_in)
    for Linear weights and biases, U(±1/√hidden) for RNN cells, N(0, 1) embeddings; model rules
    still apply first). freeze_embedding: keep the item embedding at its initial values (the
    CASPER LSTM computes its input embeddings once and never trains them).
    """

    epochs: int = 50
    lr: float = 0.001
    embedding_dim: int = 128
    max_len: int = 50
    batch_size: int = 128
    batch_order: Literal["shuffled", "temporal"] = "shuffled"
    samples: Literal["window", "prefix", "history"] = "window"
    dropout: float = 0.2
    weight_decay: float = 0.0
    exclude_seen: bool = False
    patience: int | None = None
    patience_metric: str = "mrr"
    device: str = "cpu"
    num_threads: int = 1
    checkpoint_every: int | None = None
    first_samples: bool = False
    pad_left: bool = False
    init: Literal["default", "torch"] = "default"
    freeze_embedding: bool = False
    #: the sample layouts a model offers (``samples``)
    layouts: ClassVar[tuple[str, ...]] = ("prefix", "window")

    def validate(self) -> None:
        def need(ok: bool, key: str, what: str) -> None:
            if not ok:
                raise ConfigError(f"{type(self).__qualname__}.{key} = {getattr(self, key)!r}: "
                                  f"{what}")

        for key in ("epochs", "embedding_dim", "max_len", "batch_size", "num_threads"):
            v = getattr(self, key)
            need(bool(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1), key,
                 "must be an integer >= 1")
        need(isinstance(self.lr, (int, float)) and self.lr > 0, "lr", "must be > 0")
        need(isinstance(self.dropout, (int, float)) and 0 <= self.dropout < 1, "dropout",
             "must be in [0, 1)")
        need(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        need(self.samples in self.layouts, "samples",
             "must be " + " or ".join(repr(v) for v in self.layouts))
        need(isinstance(self.exclude_seen, bool), "exclude_seen", "must be True or False")
        need(isinstance(self.device, str) and (self.device in ("cpu", "cuda", "auto") or (
            self.device.startswith("cuda:") and self.device[5:].isdigit())), "device",
            "must be 'cpu', 'cuda', 'cuda:N' or 'auto'")
        for key in ("patience", "checkpoint_every"):
            v = getattr(self, key)
            need(v is None or (isinstance(v, int) and not isinstance(v, bool) and v >= 1), key,
                 "must be None or an integer >= 1")
        for key in ("first_samples", "pad_left", "freeze_embedding"):
            need(isinstance(getattr(self, key), bool), key, "must be True or False")
        need(self.samples == "prefix" or not (self.first_samples or self.pad_left),
             "samples", "must be 'prefix' when first_samples or pad_left is set")
        need(isinstance(self.patience_metric, str) and (self.patience_metric == "mrr" or (
            self.patience_metric.startswith("ndcg@") and self.patience_metric[5:].isdigit()
            and int(self.patience_metric[5:]) >= 1)), "patience_metric",
            "must be 'mrr' or 'ndcg@K' (K >= 1)")


@dataclass(frozen=True)
class RecurrentConfig(SequentialConfig):
    """Options of the models with a GRU or LSTM layer (GRU4Rec, LSTM, LatentCross; JODIE's
    t-batch recurrence is its own, :mod:`recaudit.models.sequential._jodie._rnn`).

    recurrence: how a stack's recurrent layers run — ``"native"`` (each trial's own fused
    kernel: cuDNN, oneDNN), ``"batched"`` (every trial of a stack at once,
    step by step, as batched products over the trials: what a GPU runs fastest for a stack) or
    ``"auto"`` (default: batched on CUDA, native on the CPU, where it is the faster for a model
    alone). Both are exact for each trial whatever the stack; they are different arithmetic,
    so a model's numbers differ between the two in the last bits.
    """

    recurrence: Literal["auto", "native", "batched"] = "auto"

    def validate(self) -> None:
        super().validate()
        if self.recurrence not in ("auto", "native", "batched"):
            raise ConfigError(f"{type(self).__qualname__}.recurrence = {self.recurrence!r}: "
                              "must be 'auto', 'native' or 'batched'", key="recurrence")


@dataclass(frozen=True)
class GRU4RecConfig(RecurrentConfig):
    """GRU4Rec options; see :class:`SequentialConfig` for the shared ones.

    hidden_dim: GRU state size (128). layers: stacked GRU layers (1, as the paper's best runs).
    dropout: embedding dropout (0.3, RecBole's default; the paper tunes 0-0.5).
    """

    hidden_dim: int = 128
    layers: int = 1
    dropout: float = 0.3

    def validate(self) -> None:
        super().validate()
        for key in ("hidden_dim", "layers"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"GRU4RecConfig.{key} = {v!r}: must be an integer >= 1")


@dataclass(frozen=True)
class LSTMConfig(RecurrentConfig):
    """LSTM options (see :class:`SequentialConfig`). hidden_dim: state size (128);
    layers: stacked LSTM layers (1)."""

    hidden_dim: int = 128
    layers: int = 1

    def validate(self) -> None:
        super().validate()
        for key in ("hidden_dim", "layers"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"LSTMConfig.{key} = {v!r}: must be an integer >= 1")


@dataclass(frozen=True)
class SASRecConfig(SequentialConfig):
    """SASRec options (see :class:`SequentialConfig`). blocks: self-attention blocks (2);
    heads: attention heads (1); inner_dim: feed-forward inner size (None = embedding_dim, as
    the paper's point-wise Conv1d; RecBole uses 256 for d = 64)."""

    blocks: int = 2
    heads: int = 1
    inner_dim: int | None = None

    def validate(self) -> None:
        super().validate()
        for key in ("blocks", "heads"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"{type(self).__name__}.{key} = {v!r}: must be an integer >= 1")
        if self.inner_dim is not None and (not isinstance(self.inner_dim, int)
                                           or self.inner_dim < 1):
            raise ConfigError(f"{type(self).__name__}.inner_dim = {self.inner_dim!r}: must be "
                              "None or an integer >= 1")
        if self.embedding_dim % self.heads:
            raise ConfigError(f"{type(self).__name__}: embedding_dim {self.embedding_dim} must be "
                              f"divisible by heads {self.heads}")


@dataclass(frozen=True)
class TiSASRecConfig(SASRecConfig):
    """TiSASRec options (see :class:`SASRecConfig`). time_span: interval clip ``k`` (256)."""

    time_span: int = 256

    def validate(self) -> None:
        super().validate()
        if not isinstance(self.time_span, int) or isinstance(self.time_span, bool) \
                or self.time_span < 1:
            raise ConfigError(f"TiSASRecConfig.time_span = {self.time_span!r}: must be an "
                              "integer >= 1")


@dataclass(frozen=True)
class BERT4RecConfig(SequentialConfig):
    """BERT4Rec options (see :class:`SequentialConfig`). layers: bidirectional transformer
    blocks (2). heads: attention heads per block (2). mask_prob: Cloze masking probability
    (0.2). dropout: dropout probability (0.1)."""

    layers: int = 2
    heads: int = 2
    mask_prob: float = 0.2
    dropout: float = 0.1

    def validate(self) -> None:
        super().validate()
        for key in ("layers", "heads"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"BERT4RecConfig.{key} = {v!r}: must be an integer >= 1")
        if self.embedding_dim % self.heads:
            raise ConfigError(f"BERT4RecConfig: embedding_dim {self.embedding_dim} must be "
                              f"divisible by heads {self.heads}")
        if not 0 < self.mask_prob < 1:
            raise ConfigError(f"BERT4RecConfig.mask_prob = {self.mask_prob!r}: must be in (0, 1)")
        if self.samples != "window":
            raise ConfigError("BERT4RecConfig.samples must be 'window' (the Cloze task trains on "
                              "whole windows)")
        if self.max_len < 2:
            raise ConfigError("BERT4RecConfig.max_len must be >= 2 (context + [MASK])")


@dataclass(frozen=True)
class LatentCrossConfig(RecurrentConfig):
    """LatentCross options (see :class:`SequentialConfig`). hidden_dim: GRU size (128);
    time_buckets: number of log2 time-difference buckets (32). samples: ``"window"``,
    ``"prefix"`` or ``"history"`` (each user's state over the whole history; ``batch_size``
    then counts interactions per mini-batch; see the module docstring)."""

    hidden_dim: int = 128
    time_buckets: int = 32
    batch_order: Literal["shuffled", "temporal"] = "temporal"
    layouts: ClassVar[tuple[str, ...]] = ("prefix", "window", "history")

    def validate(self) -> None:
        super().validate()
        for key in ("hidden_dim", "time_buckets"):
            v = getattr(self, key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"LatentCrossConfig.{key} = {v!r}: must be an integer >= 1")
        if self.samples == "history" and self.batch_order != "temporal":
            raise ConfigError("LatentCrossConfig.batch_order must be 'temporal' with samples = "
                              "'history': a user's state runs on in time order",
                              key="batch_order")


@dataclass(frozen=True)
class JODIEConfig(SequentialConfig):
    """JODIE options (see :class:`SequentialConfig`; ``max_len``/``samples``/``dropout`` are
    unused). lambda_user: smoothness weight of user trajectories (1.0). lambda_item: the same
    for items (1.0). batch_size: rows per optimiser step with ``grouping="count"``. grouping:
    ``"count"`` or ``"timespan"`` (the authors' rule: the time range split into spans).
    n_spans: spans of ``grouping="timespan"``. detach_targets: stop gradients at the
    regression targets as the authors' code does. loss_reduction: ``"group-sum"`` or
    ``"tbatch-mean"`` (the authors' code; see the module docstring)."""

    batch_order: Literal["temporal"] = "temporal"
    batch_size: int = 512
    lambda_user: float = 1.0
    lambda_item: float = 1.0
    grouping: Literal["count", "timespan"] = "count"
    n_spans: int = 500
    detach_targets: bool = False
    loss_reduction: Literal["group-sum", "tbatch-mean"] = "group-sum"

    def validate(self) -> None:
        super().validate()
        if self.patience is not None:
            raise ConfigError("JODIEConfig.patience is not supported by jodie; leave it None")
        for key in ("lambda_user", "lambda_item"):
            if getattr(self, key) < 0:
                raise ConfigError(f"JODIEConfig.{key} must be >= 0")
        if self.n_spans < 1:
            raise ConfigError(f"JODIEConfig.n_spans = {self.n_spans!r}: must be an integer >= 1")
