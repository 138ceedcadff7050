"""What an audit store holds: one audit's data, split and metrics, grown by later calls.

A store answers questions about one audit: its tables, the report's title and setup, the
decisions of its rounds are read from the trials and the config it keeps (``meta``
``config``). Later calls may *extend* that audit — more seeds, more perturbations, more models
on the same data (the models' comparison reads them together) — but not change what its
numbers mean:

- :func:`check_store` refuses an audit whose datasets (their filters and samples included),
  split or metrics differ from those of the audit the store holds: its trials would land
  among trials they cannot be compared with, under one title and one set of tables (a
  separate store costs nothing; the command line's default store is one per dataset, split,
  models and metrics already);
- :func:`merged` is the config the store then keeps: the models, perturbations and seeds of
  every call, in the order they came (and the most draws), so that ``recaudit status``, the
  report's title and its setup describe all it holds; an audit named by default (its models
  on its data, :func:`default_name`) is named anew for the union. (Calls whose parts do not
  make one valid config, a TracIn interval set on a model of one and on a perturbation of
  another, keep the last call's.)
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from recaudit.audit._spec import AuditConfig, perturbation_label

__all__ = ["check_store", "merged", "default_name", "held_config"]


def default_name(config: AuditConfig) -> str:
    """An audit's name when none is given (the report's title): what it audits, ``gru4rec
    and sasrec on ratings.csv`` (a model's title where given)."""
    models = [m.title or m.name for m in config.models]
    names = models[0] if len(models) == 1 else ", ".join(models[:-1]) + " and " + models[-1]
    return f"{names} on {', '.join(d.label for d in config.datasets)}"


def held_config(output: str | Path) -> AuditConfig | None:
    """The config the audit store at ``output`` keeps (None: no store, no audit config, or
    one this version cannot read)."""
    from recaudit.errors import ConfigError
    from recaudit.experiment import Store

    path = Path(output)
    if not path.exists():
        return None
    with Store(path, read_only=True) as store:
        held = store.meta().get("config") if "meta" in store.tables() else None
    if not isinstance(held, dict) or "models" not in held:
        return None
    try:
        return AuditConfig.from_dict(held)
    except (ConfigError, TypeError, ValueError, KeyError):
        return None


def _dataset(d: Any) -> str:
    """A dataset's identity with its file named by its name, not its path (one file reached
    from two folders is one dataset)."""
    from recaudit.experiment import canonical_json, identity

    out = identity(d)
    if out.get("path"):
        out["path"] = Path(out["path"]).name
    return canonical_json(out)


def check_store(config: AuditConfig, held: AuditConfig | None = None) -> None:
    """Refuse ``config`` when its store holds an audit of other data, another split or other
    metrics (module docstring): a :class:`~recaudit.errors.ConfigError` naming the store,
    what it holds and what differs. ``held``: the store's config (default: read it)."""
    from recaudit.errors import ConfigError
    from recaudit.experiment import canonical_json, identity

    held = held if held is not None else held_config(config.output)
    if held is None:
        return
    differs = []
    ours, theirs = [_dataset(d) for d in config.datasets], [_dataset(d) for d in held.datasets]
    if sorted(ours) != sorted(theirs):
        same_names = sorted(d.label for d in config.datasets) == sorted(
            d.label for d in held.datasets)
        differs.append(f"data {', '.join(d.label for d in held.datasets)}"
                       + (" filtered or sampled otherwise" if same_names else ""))
    for key, what in (("split", "split"), ("metrics", "metrics")):
        a, b = identity(getattr(held, key)), identity(getattr(config, key))
        if canonical_json(a) != canonical_json(b):
            differs.append(f"{what} " + ", ".join(
                f"{k} = {'full' if k == 'depth' and a.get(k) is None else repr(a.get(k))}"
                for k in a if a.get(k) != b.get(k)))
    if differs:
        whole = (held.metrics.depth is None and config.metrics.depth is not None
                 and dataclasses.replace(config.metrics, depth=None) == held.metrics)
        hint = ('the store compared each whole ranking (metrics.depth = "full", what recaudit '
                "compared before its default depth of 100): resume it with depth = \"full\" "
                "in the config or --depth full; or give this audit a store of its own "
                "(--output / -o)") if whole else (
                "give this audit a store of its own (--output / -o, or `output` in the "
                "config); a store grows by more seeds, perturbations or models on the same "
                "data, split and metrics")
        raise ConfigError(
            f"{config.output} holds an audit of {held.name!r} whose "
            f"{' and '.join(differs)} differ from this audit's: its trials would mix with "
            "trials they cannot be compared with, under one title and one set of tables",
            hint=hint)


def merged(config: AuditConfig, held: AuditConfig | None) -> AuditConfig:
    """The config the store keeps after ``config`` ran into it (module docstring)."""
    if held is None:
        return config
    from recaudit.experiment import canonical_json, identity

    def union(a: tuple, b: tuple, key) -> tuple:
        seen = {key(x) for x in a}
        return a + tuple(x for x in b if key(x) not in seen)

    from recaudit.errors import ConfigError

    models = union(held.models, config.models, lambda m: canonical_json(identity(m)))
    perts = union(held.perturbations, config.perturbations, perturbation_label)
    seeds = union(held.seeds, config.seeds, int)
    try:
        out = dataclasses.replace(config, models=models, perturbations=perts, seeds=seeds,
                                  draws=max(held.draws, config.draws))
    except ConfigError:  # calls whose parts do not make one config (a TracIn interval set
        return config    # on a model of one call and on a perturbation of another): the last
    if config.name == default_name(config) and held.name == default_name(held):
        out = dataclasses.replace(out, name=default_name(out))  # else the latest call's
    return out
