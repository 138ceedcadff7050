"""The perturbation protocol: what a family declares and what a runner gives it.

A perturbation is a spec object with

- ``name`` — its canonical label (``"casper-delete-k4"``, ``"fuzz:AMR:10"``);
- ``needs`` — a :class:`Needs`: which inputs besides the training log and the random generator
  it reads (the baseline's recommendations, a fitted model, the held-out pairs) and whether the
  perturbed model is trained with another seed;
- ``describe()`` — a :class:`Description` (family, edit, count, position) that results stores
  keep next to the label, so reports group trials without parsing labels;
- ``to_dict()`` — plain data that :func:`recaudit.perturb.parse` reads back;
- ``perturb(train, rng, context)`` — the pure seeded function: ``(perturbed log, record)``,
  where ``record.to_dict()`` says exactly what changed and ``context`` is a :class:`Context`
  holding what ``needs`` asked for.

A runner builds the :class:`Context` from ``needs`` alone (see :func:`recaudit.audit.run_trial`),
so a new family never means a new branch in a runner; families register their name prefix
with :func:`recaudit.perturb.register_family`.

A family that reads only an array derived from the fitted model (TracIn's influence scores)
declares ``Needs(model=True, lazy_model=True)`` and asks for the array through
:meth:`Context.remember`, the model through :meth:`Context.fitted_model`: the runner then fits
the model only when the array is not yet kept for this baseline (beside its cached rank lists),
so the trials that share a baseline, and a run resumed after a kill, compute it once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from recaudit.data import Interactions, Queries, RankLists

__all__ = ["Needs", "Description", "Context", "Perturbation", "Record"]


@dataclass(frozen=True)
class Needs:
    """What a perturbation reads besides the training log and its generator.

    recommendations: the baseline model's rank lists for the test queries
    (``context.baseline``, ``context.queries``, ``context.k``). model: the baseline model fitted
    on the training log with ``model_params`` added (``context.model``, ``context.queries``).
    model_params: parameters the fitted model needs (TracIn: ``checkpoint_every=1``).
    lazy_model: the family reads the model only through :meth:`Context.fitted_model` (and
    what it derives, through :meth:`Context.remember`), so the runner may give a ``fit``
    that fits it on demand instead of a fitted ``model``.
    protected: the held-out pairs a perturbation must never add (``context.protected``).
    reseed: the perturbed model is trained with a seed derived from the trial's
    (``derive_seed(seed, "seed-only")``), not the trial's own. rng: the perturbation draws
    from its generator (the default), so each repeated draw of an audit
    (:attr:`recaudit.audit.AuditConfig.draws`) gives another edit; ``False``: it draws nothing
    at random — its edit is a function of the training log and of what ``needs`` gives it
    (CASPER, TracIn, position removal, the references) — so every draw would give the same
    edit and train the same model: an audit trains it once per baseline and its statistics
    count it as one draw. inputs: the perturbed model
    ranks the test queries with the training log's edits applied to their contexts too
    (:meth:`recaudit.data.Queries.edited`: what the perturbation removed from a user's
    training sequence also leaves that user's test input), as when a whole sequence is
    perturbed before the split (Betello et al. 2023's released setting); the baseline model
    ranks the original queries as always.
    warm: the trial's baseline side is not the shared baseline (the model trained on the
    whole training log) but the perturbed model *warm-started*: its fit continued on the
    rows the perturbation removed (the original log's rows from the record's ``cut`` on),
    with the perturbation's ``warm_epochs`` and ``warm_lr``
    (:class:`recaudit.models.SupportsWarmStart`; ``remove-last-<window>+warm``). The model
    must declare the warm start.
    """

    recommendations: bool = False
    model: bool = False
    model_params: Mapping[str, Any] = field(default_factory=dict)
    lazy_model: bool = False
    protected: bool = False
    reseed: bool = False
    inputs: bool = False
    rng: bool = True
    warm: bool = False


@dataclass(frozen=True)
class Description:
    """A perturbation as the results store records it.

    family: the perturbation without its count (``"casper-delete"``, ``"remove-end"``,
    ``"fuzz:AMR"``). edit: what it does to interactions (``"delete"``, ``"insert"``,
    ``"replace"``; fuzzing ``"add"``, ``"remove"``, ``"change"``, ``"mixed"``; ``None`` for
    references). count: interactions edited (items removed per user for position removal,
    modifications for fuzzing); ``None`` for references. position: ``"beginning"``,
    ``"middle"`` or ``"end"`` for position removal, else ``None``. reference: the data is not
    changed (``rerun`` and its earlier name ``none``, ``seed-only``; fuzzing's ``ZERO`` and
    modification sets of size 0): the trial measures the model, not the perturbation.
    """

    family: str
    edit: str | None = None
    count: int | None = None
    position: str | None = None
    reference: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"family": self.family, "edit": self.edit, "count": self.count,
                "position": self.position, "reference": self.reference}


@dataclass(frozen=True)
class Context:
    """Inputs a runner prepares for :meth:`Perturbation.perturb` (only those ``needs`` asks for).

    queries: the test queries (context and targets, built from the original data).
    baseline: the baseline model's rank lists for ``queries``. k: the cut-off of the audit.
    model: the fitted baseline model. protected: sorted ``pair_keys`` that must not be added.
    fit: for a family whose ``needs.lazy_model`` is set, in place of ``model``: fits it (once;
    later calls return the same model). memo: ``memo(name, compute)`` returns the array that
    ``compute()`` gave for ``name`` with this baseline model and training log, computing and
    keeping it when it has none (the runner's: kept beside the baseline's cached lists).
    """

    queries: Queries | None = None
    baseline: RankLists | None = None
    k: int | None = None
    model: Any = None
    protected: np.ndarray | None = None
    fit: Callable[[], Any] | None = None
    memo: Callable[[str, Callable[[], np.ndarray]], np.ndarray] | None = None

    def fitted_model(self) -> Any:
        """The fitted baseline model: ``model`` when there is one, else ``fit()`` (None when
        the runner gave neither)."""
        if self.model is not None or self.fit is None:
            return self.model
        return self.fit()

    def remember(self, name: str, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """``compute()``, or the array it gave before for ``name`` with this baseline model and
        training log (``memo``; without one, computed every time). ``compute`` must be a pure
        function of the context's model, queries and training log."""
        return np.asarray(compute()) if self.memo is None else self.memo(name, compute)


class Record(Protocol):
    """What a perturbation returns besides the log: ``to_dict()`` is JSON data."""

    def to_dict(self) -> dict[str, Any]: ...


@runtime_checkable
class Perturbation(Protocol):
    """A registered perturbation family's spec (see the module docstring)."""

    @property
    def name(self) -> str: ...

    @property
    def needs(self) -> Needs: ...

    def describe(self) -> Description: ...

    def to_dict(self) -> dict[str, Any]: ...

    def perturb(self, train: Interactions, rng: np.random.Generator,
                context: Context) -> tuple[Interactions, Record]: ...
