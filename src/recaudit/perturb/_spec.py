"""Typed perturbation specs with CLI names: ``parse("casper-replace-popular")``.

Name grammar (see :func:`available`):

- ``rerun`` -- no change, the same seed fitted again (``none``: its earlier name);
  ``seed-only`` -- no data change, retrain with another seed (Betello et al. 2023 RQ1);
- ``remove-{beginning,middle,end}-<n>`` -- position removal (Betello et al. 2023 section 3.1);
- ``remove-last-<window>`` -- a retrain (:mod:`recaudit.perturb._retrain`): the training log
  without its last window (``1d``, ``7d``, ``12h``, ``P7D``, or a share of rows ``5%``), so the
  perturbed model is the stale one and the baseline today's retrain; ``remove-last-<window>+warm``
  -- the same stale model against itself fine-tuned on the window (a warm start) instead of
  today's retrain from scratch (:class:`RetrainSpec`);
- ``<selector>-<edit>[-<strategy>][-k<count>]`` -- interaction edits (Oh et al. 2022): selector in
  :data:`SELECTORS`, edit ``delete`` / ``insert`` / ``replace``, strategy (insert and replace
  only, default ``random``) ``random`` / ``popular`` / ``unpopular``, count ``k`` (default 1).
  E.g. ``random-delete``, ``casper-delete-k4``, ``random-insert-unpopular``,
  ``rev-adv-earliest-replace-popular``;
- any of these followed by ``+inputs`` -- the same edits also reach the test inputs: the
  perturbed model ranks queries whose contexts lost (or gained) what the training log did
  (``remove-end-10+inputs``). Oh et al. 2022 and Betello et al. 2023 section 3.1 perturb
  training data only (the default); Betello et al.'s Table 3 reads as if their test sequences
  were cut too (``docs/reproduction.md``).

A spec is a pure seeded function: ``spec.apply(train, rng)`` (or ``spec(train, rng)``) returns
``(perturbed train, PerturbationRecord)``; ``tracin`` also needs ``model=`` (fitted with
checkpoints) and ``queries=`` (test queries with targets). As a
:class:`~recaudit.perturb.Perturbation` it declares that in ``needs``. The three kinds are
typed apart (:class:`EditSpec`, :class:`PositionSpec`, :class:`ReferenceSpec`): each has the
fields that matter to it, with the values it accepts as ``Literal`` types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Literal, get_args

import numpy as np

from recaudit import _progress as progress
from recaudit.config import Config
from recaudit.data import Interactions, Queries
from recaudit.errors import ConfigError, did_you_mean
from recaudit.perturb._edits import STRATEGIES, delete_rows, insert_after, replace_items
from recaudit.perturb._position import POSITIONS, remove_positions, seed_only
from recaudit.perturb._protocol import Context, Description, Needs
from recaudit.perturb._record import PerturbationRecord
from recaudit.perturb._retrain import parse_window, remove_last

__all__ = ["EditSpec", "PositionSpec", "ReferenceSpec", "RetrainSpec", "PerturbationSpec",
           "parse_name", "from_dict", "examples", "SELECTORS", "EDITS"]



Selector = Literal["random", "earliest-random", "latest-random", "casper", "tracin",
                   "rev-adv-earliest", "rev-adv-random"]
Edit = Literal["delete", "insert", "replace"]
Strategy = Literal["random", "popular", "unpopular"]
Where = Literal["beginning", "middle", "end"]
SELECTORS: tuple[str, ...] = get_args(Selector)
EDITS: tuple[str, ...] = get_args(Edit)



def examples() -> list[str]:
    """Every built-in name (``<n>`` stands for a positive integer; ``-k<count>`` may follow
    edits, and ``+inputs`` any name but the floors ``rerun``, ``none`` and ``seed-only`` and
    the retrains ``remove-last-<window>``, whose window may be any duration or share,
    :func:`~recaudit.perturb.parse_window`)."""
    names = ["rerun", "seed-only", "none"] + [f"remove-{w}-<n>" for w in POSITIONS]
    names += ["remove-last-<n>d", "remove-last-<n>%", "remove-last-<n>d+warm"]
    for sel in SELECTORS:
        names.append(f"{sel}-delete")
        for edit in ("insert", "replace"):
            names += [f"{sel}-{edit}"] + [f"{sel}-{edit}-{s}" for s in STRATEGIES]
    return names


class _Spec:
    """What every built-in spec does: its name, description, needs and the protocol."""

    kind: str
    inputs: bool

    @property
    def name(self) -> str:
        """Canonical CLI name (parses back to an equal spec, up to non-name parameters)."""
        return self._base_name() + ("+inputs" if self.inputs else "")

    def _base_name(self) -> str:  # pragma: no cover - each spec names itself
        raise NotImplementedError

    @property
    def reseed(self) -> bool:
        """Whether the perturbed model is trained with a different seed (seed-only)."""
        return False

    @property
    def random(self) -> bool:
        """Whether the edit draws from the generator (:attr:`Needs.rng`)."""
        return False

    @property
    def needs(self) -> Needs:
        """``+inputs`` edits the test inputs too; the rest need nothing else by default."""
        return Needs(reseed=self.reseed, inputs=self.inputs, rng=self.random)

    def perturb(self, train: Interactions, rng: np.random.Generator, context: Context
                ) -> tuple[Interactions, PerturbationRecord]:
        """The protocol form of :meth:`apply` (``context.model``/``queries`` for TracIn)."""
        return self.apply(train, rng, model=context.model, queries=context.queries)

    def __call__(self, train: Interactions, rng: np.random.Generator, **context: Any
                 ) -> tuple[Interactions, PerturbationRecord]:
        return self.apply(train, rng, **context)

    def apply(self, train: Interactions, rng: np.random.Generator, *, model: Any = None,
              queries: Queries | None = None) -> tuple[Interactions, PerturbationRecord]:
        """Perturb ``train`` (all randomness from ``rng``): ``(perturbed, record)``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy Generator (e.g. recaudit.seeds.make_rng(...))")
        return self._apply(train, rng, model, queries)

    def _apply(self, train: Interactions, rng: np.random.Generator, model: Any,
               queries: Queries | None) -> tuple[Interactions, PerturbationRecord]:
        raise NotImplementedError  # pragma: no cover - each spec applies itself

    def describe(self) -> Description:  # pragma: no cover - each spec describes itself
        raise NotImplementedError


@dataclass(frozen=True)
class ReferenceSpec(_Spec, Config):
    """A trial that changes no data, a noise floor: ``rerun`` (the same data and seed, fitted
    again: rank lists identical to the baseline's for a deterministic model; where training is
    not reproducible, e.g. a command model or GPU kernels, it measures that nondeterminism) or
    ``seed-only`` (the same data, another training seed; Betello et al. 2023 RQ1). ``none`` is
    the earlier name of ``rerun``, kept so that stores that used it resume with the same
    trial ids.

    kind: ``rerun``, ``seed-only`` or ``none``. inputs: always false (nothing is edited)."""

    kind: Literal["rerun", "seed-only", "none"]
    inputs: bool = False

    def validate(self) -> None:
        if self.inputs:
            raise self.invalid("inputs", f"perturbation inputs={self.inputs!r} is invalid; "
                                         f"{self.kind!r} edits nothing")

    def _base_name(self) -> str:
        return self.kind

    @property
    def reseed(self) -> bool:
        return self.kind == "seed-only"

    def describe(self) -> Description:
        return Description(self.kind, reference=True)

    def _apply(self, train: Interactions, rng: np.random.Generator, model: Any,
               queries: Queries | None) -> tuple[Interactions, PerturbationRecord]:
        if self.kind == "seed-only":
            return seed_only(train)
        return train, PerturbationRecord(kind="none", selector="none", n_rows=len(train),
                                         source=train.fingerprint(), params={"spec": self.name})


@dataclass(frozen=True)
class PositionSpec(_Spec, Config):
    """Position removal (Betello et al. 2023 §3.1): ``n`` items removed at the ``where`` of
    every user's training sequence.

    kind: ``position``. where: ``beginning``, ``middle`` or ``end``. n: items removed per
    user. min_keep: items every user keeps. inputs: the test queries' contexts lose the same
    items (``+inputs``; :attr:`~recaudit.perturb.Needs.inputs`)."""

    where: Where
    n: int
    min_keep: int = 1
    inputs: bool = False
    kind: Literal["position"] = "position"

    def validate(self) -> None:
        if self.n < 1:
            raise self.invalid("n", f"perturbation n={self.n!r} is invalid; expected an "
                                    "integer >= 1")
        if self.min_keep < 0:
            raise self.invalid("min_keep", f"perturbation min_keep={self.min_keep!r} is "
                                           "invalid; expected an integer >= 0")

    def _base_name(self) -> str:
        return f"remove-{self.where}-{self.n}"

    def describe(self) -> Description:
        scope = "+inputs" if self.inputs else ""
        return Description(f"remove-{self.where}{scope}", "delete", self.n, self.where)

    def _apply(self, train: Interactions, rng: np.random.Generator, model: Any,
               queries: Queries | None) -> tuple[Interactions, PerturbationRecord]:
        return remove_positions(train, self.where, self.n, min_keep=self.min_keep)


@dataclass(frozen=True)
class RetrainSpec(_Spec, Config):
    """A retrain (:mod:`recaudit.perturb._retrain`): the training log without its last
    ``window``. The perturbed model is the *stale* model, trained before the window; the
    baseline is today's retrain from scratch on the whole log; both rank the same test queries,
    today's contexts. Several windows in one audit give churn as a function of staleness.

    ``warm`` (``remove-last-<window>+warm``): the trial's baseline side is instead the stale
    model *fine-tuned on the window* — its weights continued, same seed, trained on the
    window's interactions only (their contexts from the whole log) for ``warm_epochs`` epochs at
    ``warm_lr`` (:class:`recaudit.models.SupportsWarmStart`). Both variants compare against the
    same stale model's lists, so ``compare_perturbations("remove-last-7d+warm",
    "remove-last-7d")`` decides whether fine-tuning churns less than retraining from scratch,
    and the ``mrr_base`` of the two is the accuracy each way of updating gives.

    kind: ``retrain``. window: the removed window, a duration (``7d``, ``12h``, ``P7D``) or a
    share of rows (``5%``). warm: the baseline side is the stale model fine-tuned on the
    window (``+warm``). warm_epochs: epochs of that fine-tuning (default 1). warm_lr: its
    learning rate (None: the model's own ``lr``). time_unit: seconds per unit of the log's
    timestamps, for a duration on a log whose clock counts minutes (60), days (86400) or any
    other unit (default 1: seconds). inputs: always false (today's users are asked with
    today's contexts)."""

    window: str
    warm: bool = False
    warm_epochs: int = 1
    warm_lr: float | None = None
    time_unit: float = 1.0
    inputs: bool = False
    kind: Literal["retrain"] = "retrain"

    def validate(self) -> None:
        try:
            parse_window(self.window)
        except ConfigError as exc:
            raise self.invalid("window", str(exc)) from None
        if self.inputs:
            raise self.invalid("inputs", "a retrain asks today's users with today's contexts; "
                                         "it has no '+inputs'")
        if self.warm_epochs < 1:
            raise self.invalid("warm_epochs", f"perturbation warm_epochs={self.warm_epochs!r} "
                                              "is invalid; expected an integer >= 1")
        if not self.time_unit > 0:
            raise self.invalid("time_unit", f"perturbation time_unit={self.time_unit!r} is "
                                            "invalid; expected the seconds of one unit of the "
                                            "log's times, > 0 (60: minutes, 86400: days)")
        if self.time_unit != 1.0 and self.window.endswith("%"):
            raise self.invalid("time_unit", "a share of rows has no time unit; time_unit is "
                                            "for a duration")
        if self.warm_lr is not None and not self.warm_lr > 0:
            raise self.invalid("warm_lr", f"perturbation warm_lr={self.warm_lr!r} is "
                                          "invalid; expected a number > 0")
        if not self.warm and (self.warm_epochs != 1 or self.warm_lr is not None):
            raise self.invalid("warm_epochs" if self.warm_epochs != 1 else "warm_lr",
                               "warm_epochs and warm_lr set the fine-tuning of "
                               f"'remove-last-{self.window}+warm'; this spec fine-tunes "
                               "nothing")

    @property
    def name(self) -> str:
        return self._base_name() + ("+warm" if self.warm else "")

    def _base_name(self) -> str:
        return f"remove-last-{parse_window(self.window).name}"

    @property
    def random(self) -> bool:
        """The window is a function of the log: every draw removes the same rows."""
        return False

    @property
    def needs(self) -> Needs:
        return Needs(rng=False, warm=self.warm)

    def describe(self) -> Description:
        return Description("remove-last" + ("+warm" if self.warm else ""), "delete")

    def _apply(self, train: Interactions, rng: np.random.Generator, model: Any,
               queries: Queries | None) -> tuple[Interactions, Any]:
        return remove_last(train, parse_window(self.window), warm=self.warm,
                           time_unit=self.time_unit)


@dataclass(frozen=True)
class EditSpec(_Spec, Config):
    """Interaction edits (Oh et al. 2022): ``count`` rows picked by ``selector``, deleted,
    followed by an inserted interaction, or given another item.

    kind: ``edit``. selector: which rows (:data:`SELECTORS`). edit: ``delete``, ``insert`` or
    ``replace``. strategy: the new item of an insert or replace (``random``, ``popular``,
    ``unpopular``). count: rows edited. max_len: CASPER's look-ahead window (None:
    unbounded). casper_method: CASPER's ``auto``, ``exact`` or ``approx`` computation.
    checkpoint_every: TracIn's checkpoint interval in epochs (Oh et al. 2022: 10), for a
    model whose own spec sets none (an audit refuses two different values); None: the
    model's own, else every epoch. TracIn only: it changes which states TracIn's sum runs
    over, not training. inputs: the test queries' contexts get the same edits
    (``+inputs``)."""

    selector: Selector
    edit: Edit
    strategy: Strategy = "random"
    count: int = 1
    max_len: int | None = None
    casper_method: Literal["auto", "exact", "approx"] = "auto"
    checkpoint_every: int | None = None
    inputs: bool = False
    kind: Literal["edit"] = "edit"

    def validate(self) -> None:
        if self.count < 1:
            raise self.invalid("count", f"perturbation count={self.count!r} is invalid; "
                                        "expected an integer >= 1")
        every = self.checkpoint_every
        if every is not None and (isinstance(every, bool) or every < 1):
            raise self.invalid("checkpoint_every", f"perturbation checkpoint_every={every!r} "
                                                   "is invalid; expected an integer >= 1")
        if every is not None and self.selector != "tracin":
            raise self.invalid("checkpoint_every", "checkpoint_every is TracIn's checkpoint "
                                                   f"interval; {self.selector!r} reads no "
                                                   "checkpoints: leave it out")
        if self.max_len is not None and self.max_len < 1:
            raise self.invalid("max_len", f"perturbation max_len={self.max_len!r} is "
                                          "invalid; expected a positive integer or None")

    def _base_name(self) -> str:
        name = f"{self.selector}-{self.edit}"
        if self.edit != "delete":
            name += f"-{self.strategy}"
        return name + (f"-k{self.count}" if self.count != 1 else "")

    @property
    def random(self) -> bool:
        """CASPER and TracIn pick their rows from scores of the log (and of the fitted
        model); a deletion, or a new item chosen by popularity, then draws nothing. The other
        selectors pick rows at random, Rev.Adv. samples its surrogate, and a ``random`` new
        item is drawn."""
        deterministic_rows = self.selector in ("casper", "tracin")
        return not deterministic_rows or (self.edit != "delete" and self.strategy == "random")

    @property
    def needs(self) -> Needs:
        """TracIn reads the fitted baseline (with checkpoints) and the test queries; it asks
        for the model only when its influence scores are not yet kept for this baseline."""
        if self.selector == "tracin":
            every = self.checkpoint_every or 1
            return Needs(model=True, lazy_model=True, model_params={"checkpoint_every": every},
                         inputs=self.inputs, rng=self.random)
        return super().needs

    def perturb(self, train: Interactions, rng: np.random.Generator, context: Context
                ) -> tuple[Interactions, PerturbationRecord]:
        """The protocol form of :meth:`apply`. TracIn's scores go through
        :meth:`Context.remember` (``"tracin"``): one computation per baseline model, shared by
        its TracIn deletion, insertion and replacement and kept across a resumed run; the same
        scores, so the same rows, as :meth:`apply` with the fitted model."""
        if self.selector != "tracin":
            return super().perturb(train, rng, context)
        from recaudit.perturb._selectors import top_k

        def compute() -> np.ndarray:
            progress.report(phase="perturbing: checkpointed refit")
            model = context.fitted_model()
            progress.report(phase="perturbing: TracIn scores")
            return _tracin(model, train, context.queries)

        scores = context.remember("tracin", compute)
        if scores.shape != (len(train),):
            raise ValueError(f"the kept TracIn scores have shape {scores.shape}, expected "
                             f"({len(train)},): they were made for another training log")
        rows = top_k(scores, self.count)
        return self._edit(train, rng, rows, scores[rows])

    def describe(self) -> Description:
        family = f"{self.selector}-{self.edit}"
        if self.edit != "delete":
            family += f"-{self.strategy}"
        return Description(family + ("+inputs" if self.inputs else ""), self.edit, self.count)

    def _apply(self, train: Interactions, rng: np.random.Generator, model: Any,
               queries: Queries | None) -> tuple[Interactions, PerturbationRecord]:
        rows, scores = self._select(train, rng, model, queries)
        return self._edit(train, rng, rows, scores)

    def _edit(self, train: Interactions, rng: np.random.Generator, rows: np.ndarray,
              scores: np.ndarray | None) -> tuple[Interactions, PerturbationRecord]:
        params: dict[str, Any] = {"spec": self.name, "count": self.count}
        if self.selector == "casper":
            params.update(max_len=self.max_len, casper_method=self.casper_method)
        common: dict[str, Any] = dict(selector=self.selector, scores=scores, params=params)
        if self.edit == "delete":
            return delete_rows(train, rows, **common)
        if self.edit == "insert":
            return insert_after(train, rows, rng, strategy=self.strategy, **common)
        return replace_items(train, rows, rng, strategy=self.strategy, **common)

    def _select(self, train: Interactions, rng: np.random.Generator, model: Any,
                queries: Queries | None) -> tuple[np.ndarray, np.ndarray]:
        # the selectors (CASPER's numba kernels) are imported when rows are selected: a
        # name is parsed and checked without them
        from recaudit.perturb._selectors import (select_casper, select_earliest_random,
                                                 select_latest_random, select_random, top_k)

        sel, k = self.selector, self.count
        if sel == "random":
            return select_random(train, k, rng)
        if sel == "earliest-random":
            return select_earliest_random(train, k, rng)
        if sel == "latest-random":
            return select_latest_random(train, k, rng)
        if sel == "casper":
            return select_casper(train, k, max_len=self.max_len, method=self.casper_method)
        if sel == "tracin":
            scores = _tracin(model, train, queries)
            rows = top_k(scores, k)
            return rows, scores[rows]
        from recaudit.perturb._revadv import select_rev_adv

        return select_rev_adv(train, k, rng, variant=sel.removeprefix("rev-adv-"))


def _tracin(model: Any, train: Interactions, queries: Queries | None) -> np.ndarray:
    """TracIn score of every row of ``train`` (checked inputs)."""
    from recaudit.perturb._tracin import SupportsTracIn, tracin_scores

    if model is None or queries is None or not isinstance(model, SupportsTracIn):
        raise ConfigError("the tracin selector needs model= (fitted with checkpoint_every=N, "
                          "providing checkpoint_gradients) and queries= (test queries with "
                          "targets)")
    return tracin_scores(model, train, queries)


#: A built-in perturbation spec: an edit, a position removal, a retrain or a reference.
PerturbationSpec = EditSpec | PositionSpec | RetrainSpec | ReferenceSpec
_KINDS: dict[str, type[Config]] = {"edit": EditSpec, "position": PositionSpec,
                                   "retrain": RetrainSpec,
                                   "none": ReferenceSpec, "seed-only": ReferenceSpec,
                                   "rerun": ReferenceSpec}


_EDIT_RE = re.compile(r"^(?P<sel>.+?)-(?P<edit>delete|insert|replace)"
                      r"(?:-(?P<strategy>random|popular|unpopular))?(?:-k(?P<k>\d+))?$")
_POS_RE = re.compile(r"^remove-(?P<where>beginning|middle|end)-(?P<n>\d+)$")
_LAST_RE = re.compile(r"^remove-last-(?P<window>.+)$")


def parse_name(name: str, **overrides: Any) -> PerturbationSpec:
    """The built-in spec a CLI name stands for; ``overrides`` set other fields (e.g.
    ``max_len=50``). Unknown names raise :class:`~recaudit.errors.ConfigError` naming the
    closest valid one. (:func:`recaudit.perturb.parse` reads every registered family.)
    """
    if not isinstance(name, str):
        raise ConfigError(f"perturbation name must be a string, got {type(name).__name__}")
    text = name.strip().lower()
    base, plus, scope = text.partition("+")
    if _LAST_RE.match(base):
        if plus and scope != "warm":
            raise ConfigError(f"unknown perturbation {name!r}: a retrain's only suffix is "
                              f"'+warm' (fine-tune the stale model on the window); it asks "
                              f"today's users with today's contexts, so it has no "
                              f"'+{scope}'. Did you mean '{base}+warm'?")
        window = parse_window(_LAST_RE.match(base)["window"], where=name)  # type: ignore[index]
        return from_dict({"kind": "retrain", "window": window.name, "warm": bool(plus),
                          **overrides})
    if plus and scope not in ("inputs", "warm"):
        raise ConfigError(f"unknown perturbation {name!r}: the only suffix is '+inputs' "
                          f"(the edits reach the test inputs too). Did you mean "
                          f"'{base}+inputs'?")
    if scope == "warm":
        raise ConfigError(f"unknown perturbation {name!r}: '+warm' fine-tunes a stale model "
                          "on the window a retrain removed; only remove-last-<window> has it "
                          "(e.g. remove-last-7d+warm)")
    if plus:
        if base in ("none", "seed-only", "rerun"):
            raise ConfigError(f"unknown perturbation {name!r}: {base!r} edits nothing, so it "
                              f"has no '+inputs'. Use {base!r}")
        return parse_name(base, **{"inputs": True, **overrides})
    fields: dict[str, Any] | None = None
    if text in ("none", "seed-only", "rerun"):
        fields = {"kind": text}
    elif m := _POS_RE.match(text):
        fields = {"kind": "position", "where": m["where"], "n": int(m["n"])}
    elif (m := _EDIT_RE.match(text)) and m["sel"] in SELECTORS:
        if m["edit"] == "delete" and m["strategy"]:
            raise ConfigError(f"unknown perturbation {name!r}: a delete has no new-item "
                              f"strategy. Did you mean '{m['sel']}-delete'?")
        fields = {"kind": "edit", "selector": m["sel"], "edit": m["edit"],
                  "strategy": m["strategy"] or "random", "count": int(m["k"] or 1)}
    if fields is None or fields.get("n", 1) < 1 or fields.get("count", 1) < 1:
        names = examples()
        hint = did_you_mean(text, names, cutoff=0.4)
        raise ConfigError(f"unknown perturbation {name!r}.{hint} Valid names: "
                          f"{', '.join(names[:6])}, ... (`recaudit perturbations list` shows "
                          "all, in words; edits accept -k<count>)")
    fields.update(overrides)
    return from_dict(fields)


def from_dict(fields: Any) -> PerturbationSpec:
    """A built-in spec from its ``to_dict()`` fields (``kind`` says which)."""
    if not isinstance(fields, Mapping):
        raise ConfigError(f"expected a table with a 'kind', got {type(fields).__name__} "
                          f"{fields!r}")
    kind = fields.get("kind")
    if kind not in _KINDS:
        raise ConfigError(f"perturbation kind={kind!r} is invalid; expected one of "
                          f"{', '.join(_KINDS)}." + did_you_mean(str(kind), _KINDS), key="kind")
    return _KINDS[kind].from_dict(fields, what="a perturbation spec")  # type: ignore[return-value]
