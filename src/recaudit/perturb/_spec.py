"""Typed perturbation specs with CLI names: ``parse("casper-replace-popular")``.

Name grammar (see :func:`available`):

- ``none`` -- no change (the baseline trial itself); ``seed-only`` -- no data change, retrain
  with another seed (Betello et al. 2023 RQ1);
- ``remove-{beginning,middle,end}-<n>`` -- position removal (Betello et al. 2023 section 3.1);
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
:class:`~recaudit.perturb.Perturbation` it declares that in :attr:`PerturbationSpec.needs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from recaudit.config import Config
from recaudit.data import Interactions, Queries
from recaudit.errors import ConfigError, did_you_mean
from recaudit.perturb._edits import STRATEGIES, delete_rows, insert_after, replace_items
from recaudit.perturb._position import POSITIONS, remove_positions, seed_only
from recaudit.perturb._protocol import Context, Description, Needs
from recaudit.perturb._record import PerturbationRecord
from recaudit.perturb._selectors import (select_casper, select_earliest_random,
                                         select_latest_random, select_random, top_k)

__all__ = ["PerturbationSpec", "parse_name", "examples", "SELECTORS", "EDITS"]

SELECTORS = ("random", "earliest-random", "latest-random", "casper", "tracin",
             "rev-adv-earliest", "rev-adv-random")
EDITS = ("delete", "insert", "replace")
KINDS = ("edit", "position", "seed-only", "none")


def examples() -> list[str]:
    """Every built-in name (``<n>`` stands for a positive integer; ``-k<count>`` may follow
    edits, and ``+inputs`` any name but ``none`` and ``seed-only``)."""
    names = ["none", "seed-only"] + [f"remove-{w}-<n>" for w in POSITIONS]
    for sel in SELECTORS:
        names.append(f"{sel}-delete")
        for edit in ("insert", "replace"):
            names += [f"{sel}-{edit}"] + [f"{sel}-{edit}-{s}" for s in STRATEGIES]
    return names


@dataclass(frozen=True)
class PerturbationSpec(Config):
    """One training-data perturbation, fully typed.

    kind: ``edit`` (uses ``selector``, ``edit``, ``strategy``, ``count``, and for CASPER
    ``max_len`` / ``casper_method``), ``position`` (uses ``where``, ``n``, ``min_keep``),
    ``seed-only`` or ``none``. selector: which rows an edit picks (:data:`SELECTORS`).
    edit: ``delete``, ``insert`` or ``replace``. strategy: the new item of an insert or
    replace (``random``, ``popular``, ``unpopular``). count: rows edited. where: position
    removal's ``beginning``, ``middle`` or ``end``. n: items removed per user. min_keep: items
    every user keeps. max_len: CASPER's look-ahead window (None: unbounded). casper_method:
    CASPER's ``auto``, ``exact`` or ``approx`` computation. inputs: the test queries'
    contexts get the same edits (``+inputs``; :attr:`~recaudit.perturb.Needs.inputs`).
    """

    kind: str
    selector: str | None = None
    edit: str | None = None
    strategy: str = "random"
    count: int = 1
    where: str | None = None
    n: int = 0
    min_keep: int = 1
    max_len: int | None = None
    casper_method: str = "auto"
    inputs: bool = False

    def validate(self) -> None:
        def bad(key: str, value: Any, allowed: Any) -> ConfigError:
            return self.invalid(key, f"perturbation {key}={value!r} is invalid; expected "
                                     f"{allowed}")

        if self.kind not in KINDS:
            raise bad("kind", self.kind, KINDS)
        if self.inputs and self.kind in ("none", "seed-only"):
            raise bad("inputs", self.inputs, f"false for {self.kind!r}, which edits nothing")
        if self.max_len is not None and self.max_len < 1:
            raise bad("max_len", self.max_len, "a positive integer or None")
        if self.kind == "edit":
            if self.selector not in SELECTORS:
                raise bad("selector", self.selector, SELECTORS)
            if self.edit not in EDITS:
                raise bad("edit", self.edit, EDITS)
            if self.strategy not in STRATEGIES:
                raise bad("strategy", self.strategy, STRATEGIES)
            if self.count < 1:
                raise bad("count", self.count, "an integer >= 1")
            if self.casper_method not in ("auto", "exact", "approx"):
                raise bad("casper_method", self.casper_method, ("auto", "exact", "approx"))
        elif self.kind == "position":
            if self.where not in POSITIONS:
                raise bad("where", self.where, POSITIONS)
            if self.n < 1:
                raise bad("n", self.n, "an integer >= 1")
            if self.min_keep < 0:
                raise bad("min_keep", self.min_keep, "an integer >= 0")

    # ------------------------------------------------------------------ naming
    @property
    def name(self) -> str:
        """Canonical CLI name (parses back to an equal spec, up to non-name parameters)."""
        if self.kind in ("none", "seed-only"):
            return self.kind
        return self._edit_name() + ("+inputs" if self.inputs else "")

    def _edit_name(self) -> str:
        if self.kind == "position":
            return f"remove-{self.where}-{self.n}"
        name = f"{self.selector}-{self.edit}"
        if self.edit != "delete":
            name += f"-{self.strategy}"
        return name + (f"-k{self.count}" if self.count != 1 else "")

    @property
    def reseed(self) -> bool:
        """Whether the perturbed model is trained with a different seed (seed-only)."""
        return self.kind == "seed-only"

    @property
    def needs(self) -> Needs:
        """TracIn reads the fitted baseline (with checkpoints) and the test queries; seed-only
        retrains with another seed; ``+inputs`` edits the test inputs too; the rest need
        nothing else."""
        if self.kind == "edit" and self.selector == "tracin":
            return Needs(model=True, model_params={"checkpoint_every": 1}, inputs=self.inputs)
        return Needs(reseed=self.reseed, inputs=self.inputs)

    def describe(self) -> Description:
        if self.kind in ("none", "seed-only"):
            return Description(self.kind, reference=True)
        scope = "+inputs" if self.inputs else ""
        if self.kind == "position":
            return Description(f"remove-{self.where}{scope}", "delete", self.n, self.where)
        family = f"{self.selector}-{self.edit}"
        if self.edit != "delete":
            family += f"-{self.strategy}"
        return Description(family + scope, self.edit, self.count)

    def perturb(self, train: Interactions, rng: np.random.Generator, context: Context
                ) -> tuple[Interactions, PerturbationRecord]:
        """The protocol form of :meth:`apply` (``context.model``/``queries`` for TracIn)."""
        return self.apply(train, rng, model=context.model, queries=context.queries)

    @classmethod
    def from_dict(cls, data: Any, *, key: str | None = None, what: str | None = None,
                  noun: str = "key") -> PerturbationSpec:
        return super().from_dict(data, key=key, what=what or "a perturbation spec", noun=noun)

    # ------------------------------------------------------------------ running
    def __call__(self, train: Interactions, rng: np.random.Generator, **context: Any
                 ) -> tuple[Interactions, PerturbationRecord]:
        return self.apply(train, rng, **context)

    def apply(self, train: Interactions, rng: np.random.Generator, *, model: Any = None,
              queries: Queries | None = None) -> tuple[Interactions, PerturbationRecord]:
        """Perturb ``train`` (all randomness from ``rng``): ``(perturbed, record)``."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError("rng must be a numpy Generator (e.g. recaudit.seeds.make_rng(...))")
        if self.kind == "none":
            return train, PerturbationRecord(kind="none", selector="none", n_rows=len(train),
                                             source=train.fingerprint(),
                                             params={"spec": self.name})
        if self.kind == "seed-only":
            return seed_only(train)
        if self.kind == "position":
            return remove_positions(train, str(self.where), self.n, min_keep=self.min_keep)
        rows, scores = self._select(train, rng, model, queries)
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
            from recaudit.perturb._tracin import SupportsTracIn, tracin_scores

            if model is None or queries is None or not isinstance(model, SupportsTracIn):
                raise ConfigError("the tracin selector needs model= (fitted with "
                                  "checkpoint_every=N, providing checkpoint_gradients) and "
                                  "queries= (test queries with targets)")
            scores = tracin_scores(model, train, queries)
            rows = top_k(scores, k)
            return rows, scores[rows]
        from recaudit.perturb._revadv import select_rev_adv

        return select_rev_adv(train, k, rng, variant=str(sel).removeprefix("rev-adv-"))


_EDIT_RE = re.compile(r"^(?P<sel>.+?)-(?P<edit>delete|insert|replace)"
                      r"(?:-(?P<strategy>random|popular|unpopular))?(?:-k(?P<k>\d+))?$")
_POS_RE = re.compile(r"^remove-(?P<where>beginning|middle|end)-(?P<n>\d+)$")


def parse_name(name: str, **overrides: Any) -> PerturbationSpec:
    """The built-in spec a CLI name stands for; ``overrides`` set other fields (e.g.
    ``max_len=50``). Unknown names raise :class:`~recaudit.errors.ConfigError` naming the
    closest valid one. (:func:`recaudit.perturb.parse` reads every registered family.)
    """
    if not isinstance(name, str):
        raise ConfigError(f"perturbation name must be a string, got {type(name).__name__}")
    text = name.strip().lower()
    base, plus, scope = text.partition("+")
    if plus and scope != "inputs":
        raise ConfigError(f"unknown perturbation {name!r}: the only suffix is '+inputs' "
                          f"(the edits reach the test inputs too). Did you mean "
                          f"'{base}+inputs'?")
    if plus:
        if base in ("none", "seed-only"):
            raise ConfigError(f"unknown perturbation {name!r}: {base!r} edits nothing, so it "
                              f"has no '+inputs'. Use {base!r}")
        return parse_name(base, **{"inputs": True, **overrides})
    fields: dict[str, Any] | None = None
    if text in ("none", "seed-only"):
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
                          f"{', '.join(names[:6])}, ... (recaudit.perturb.available() lists "
                          "all; edits accept -k<count>)")
    fields.update(overrides)
    return PerturbationSpec.from_dict(fields)


def from_dict(fields: Any) -> PerturbationSpec:
    """A built-in spec from its ``to_dict()`` fields."""
    return PerturbationSpec.from_dict(fields)
