"""The part of a scale's grid a run takes (``--seeds``, ``--draws``, ``--models``,
``--perturbations``) and how it trains (``--no-train``, ``--device``, ``--stack``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Scope"]


@dataclass(frozen=True)
class Scope:
    """The part of a scale's grid a run takes: the first ``seeds`` training seeds, ``draws``
    perturbation draws per trained model, only the ``models`` and ``perturbations`` named
    (``None``: the scale's own). Users, epochs and model sizes are never reduced this way: a
    run that cannot afford the whole grid takes less of it, says so in its record, and the
    claims it cannot read stay undecided. ``perturbations`` filters each experiment's own
    list (an experiment that uses none of them trains nothing): it lets a run with little
    time train the comparisons that decide a claim first (CASPER's deletion and random
    deletion, say) and the rest later, into the same store, under the same trial ids.
    ``train=False``: train nothing, record what the stores already hold (a run stopped
    part-way; the claims of its unfinished part are "not measured").
    ``device``: where the audits' neural models train (``"cuda:0"``: every worker on that GPU;
    :func:`recaudit.reproduce._audit.on_device`); it takes nothing from the grid and does not
    change trial ids, so a store is filled on a GPU and read anywhere. ``stack``: train up to
    this many trials of one trained baseline together as one stacked model
    (``executor.stack``); like ``device``, it does not change trial ids or numbers.
    ``extend``: ``seeds`` and ``draws`` may exceed the scale's (a run that goes on until its
    claims are decided: the scale's seeds continue with the next integers, draws and
    modification sets with the next indices)."""

    seeds: int | None = None
    draws: int | None = None
    models: tuple[str, ...] | None = None
    train: bool = True
    device: str | None = None
    perturbations: tuple[str, ...] | None = None
    stack: int = 1
    extend: bool = False

    def __post_init__(self) -> None:
        from recaudit.errors import ConfigError

        if isinstance(self.stack, bool) or not isinstance(self.stack, int) or self.stack < 1:
            raise ConfigError(f"stack must be an integer >= 1, got {self.stack!r}", key="stack")
        for key in ("seeds", "draws"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{key} must be an integer >= 1, got {v!r}", key=key)
        if self.models is not None:
            object.__setattr__(self, "models", tuple(self.models))
            if not self.models:
                raise ConfigError("models must name at least one model", key="models")
        if self.perturbations is not None:
            from recaudit.perturb import parse

            object.__setattr__(self, "perturbations", tuple(self.perturbations))
            if not self.perturbations:
                raise ConfigError("perturbations must name at least one perturbation",
                                  key="perturbations")
            for name in self.perturbations:
                try:
                    parse(name)
                except ConfigError as exc:
                    raise ConfigError(exc.message, key="perturbations") from None
        if self.device is not None:
            from recaudit.models import check_device

            try:
                check_device(self.device)
            except ConfigError as exc:
                raise ConfigError(exc.message, key="device") from None

    @property
    def reduced(self) -> bool:
        return (self.seeds is not None or self.draws is not None or self.models is not None
                or self.perturbations is not None or not self.train)

    @property
    def grid(self) -> Scope:
        """This scope's part of the grid only (not how it trains: ``train``, ``device``)."""
        return Scope(self.seeds, self.draws, self.models, perturbations=self.perturbations)

    def to_dict(self) -> dict:
        """The record's ``scope`` (``perturbations`` only when named, so the records of runs
        before it existed compare equal)."""
        out = {"seeds": self.seeds, "draws": self.draws,
               "models": None if self.models is None else list(self.models)}
        if self.perturbations is not None:
            out["perturbations"] = list(self.perturbations)
        return out

    def flags(self) -> str:
        """The command-line options of this scope (``" --seeds 1 --models jodie"``)."""
        parts = [(k, getattr(self, k)) for k in ("seeds", "draws")]
        parts.append(("models", None if self.models is None else ",".join(self.models)))
        parts.append(("perturbations", None if self.perturbations is None
                      else ",".join(self.perturbations)))
        parts.append(("device", self.device))
        parts.append(("stack", self.stack if self.stack > 1 else None))
        return "".join(f" --{k} {v}" for k, v in parts if v is not None) + \
            ("" if self.train else " --no-train")

    def take(self, seeds: tuple[int, ...], draws: int = 1) -> tuple[tuple[int, ...], int]:
        """The seeds and draws of a run whose scale asks for ``seeds`` and ``draws``
        (``extend``: more than the scale's, the seeds continuing with the next integers)."""
        if self.extend:
            more = list(seeds)
            while self.seeds is not None and len(more) < self.seeds:
                more.append(max(more) + 1 if more else 0)
            n = len(more) if self.seeds is None else self.seeds
            return tuple(more[:n]), draws if self.draws is None else self.draws
        n = len(seeds) if self.seeds is None else min(self.seeds, len(seeds))
        return tuple(seeds[:n]), draws if self.draws is None else min(self.draws, draws)

    def sets(self, scale_sets: int) -> int:
        """Modification sets (draws) of a cell whose scale runs ``scale_sets``."""
        if self.draws is None:
            return scale_sets
        return self.draws if self.extend else min(self.draws, scale_sets)

    def pick(self, models: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
        """``models`` restricted to the scope's (each of which must be one of ``known``)."""
        if self.models is None:
            return models
        from recaudit.errors import ConfigError, did_you_mean

        for m in self.models:
            if m not in known:
                raise ConfigError(f"unknown model {m!r} for this experiment; its models are "
                                  f"{', '.join(known)}." + did_you_mean(m, known), key="models")
        return tuple(m for m in models if m in self.models)

    def keep(self, perturbations: tuple[str, ...]) -> tuple[str, ...]:
        """``perturbations`` (an experiment's, in its order) restricted to the scope's."""
        if self.perturbations is None:
            return tuple(perturbations)
        return tuple(p for p in perturbations if p in self.perturbations)
