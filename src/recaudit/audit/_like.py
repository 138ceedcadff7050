"""What an earlier audit's store lends a plan (``--like STORE``), and what it cannot.

:func:`like_store` finds, in the store, the trials of the audit's own model — its name and
parameters — on the same data and split: their median own time is the time per fit (no
calibration), and their per-query values give the variance. A store that holds none lends
the variance of its nearest trials (the same dataset, then the same model) with a warning
naming what differs — the dataset, the split, the model, its parameters — and no times: a
fit of another model or on other data says nothing of this one's time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from recaudit.audit._spec import TrialSpec

__all__ = ["Like", "like_store"]


@dataclass(frozen=True)
class Like:
    """What ``--like``'s store offers one (dataset, model) of the audit: the (dataset,
    model label) to read (None: no finished trial), the median own time of its trials of the
    same model on the same data (None: it has none)."""

    group: tuple[str, str] | None
    seconds: float | None = None


def like_store(path: Path, trial: TrialSpec) -> Like:
    """``--like``'s store for the audit's ``trial`` (:class:`Like`): the trials whose
    dataset, split and model (name and parameters) are the trial's when it holds any, else
    the same model's on the same dataset, else its first."""
    import json
    import warnings

    from recaudit.audit._store import AuditStore
    from recaudit.errors import ConfigError, RecauditWarning

    if not path.exists():
        raise ConfigError(f"--like {path}: no such store", hint="name an audit store "
                          "(a .duckdb file written by `recaudit audit` or `recaudit run`)")
    with AuditStore(path, read_only=True) as store:
        if "trials" not in store.tables():
            return Like(None)
        spec = "spec" if "spec" in store._present("trials") else "NULL AS spec"
        held = store.sql(f"SELECT dataset, model_label, {spec}, total_seconds FROM trials "
                         "WHERE status = 'done' ORDER BY dataset, model_label")
    if held.empty:
        return Like(None)
    ours = trial.to_dict()
    label = (trial.dataset.label, trial.model.label)
    specs = [json.loads(x) if isinstance(x, str) else None for x in held["spec"]]
    same = [(d is None and (ds, m) == label) or (d is not None and all(
        d.get(k) == ours[k] for k in ("dataset", "split", "model")))
        for d, ds, m in zip(specs, held.dataset, held.model_label)]
    if any(same):
        mine = held[same]
        seconds = mine["total_seconds"].dropna()
        return Like((mine.dataset.iloc[0], mine.model_label.iloc[0]),
                     float(seconds.median()) if len(seconds) else None)
    rank = [(ds != label[0], (d or {}).get("model", {}).get("name") != trial.model.name)
            for d, ds in zip(specs, held.dataset)]
    i = min(range(len(held)), key=rank.__getitem__)
    group = (held.dataset.iloc[i], held.model_label.iloc[i])
    differs = _differences(specs[i], ours, group, label)
    warnings.warn(f"--like {path}: it holds no trial of this audit's {label[1]} on "
                  f"{label[0]}; the plan reads {group[1]} on {group[0]} instead, which differs "
                  f"in {'; '.join(differs)}: its variance stands in for the power (a rough "
                  "figure), and its times are not used", RecauditWarning, stacklevel=3)
    return Like(group)


def _differences(theirs: dict | None, ours: dict, group: tuple[str, str],
                 label: tuple[str, str]) -> tuple[str, ...]:
    """What a stored trial's identity ``theirs`` (None: a store that kept no spec) changes
    from ``ours``, in words: the dataset, the split, the model, its parameters."""
    if theirs is None:
        return tuple(f"{what} {a} (not {b})" for what, a, b in
                     zip(("dataset", "model"), group, label) if a != b)

    def value(d: dict, k: str) -> str:
        return repr(d[k]) if k in d else "the default"

    def keys(what: str, a: dict, b: dict) -> list[str]:
        return [f"{what} {k} {value(a, k)} (not {value(b, k)})"
                for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]

    out: list[str] = []
    d_a, d_b = theirs.get("dataset", {}), ours["dataset"]
    if (d_a.get("name"), d_a.get("path")) != (d_b.get("name"), d_b.get("path")):
        out.append(f"dataset {group[0]} (not {label[0]})")
    else:
        out += keys("dataset", d_a, d_b)
    out += keys("split", theirs.get("split", {}), ours["split"])
    m_a, m_b = theirs.get("model", {}), ours["model"]
    if m_a.get("name") != m_b.get("name"):
        out.append(f"model {m_a.get('name')} (not {m_b.get('name')})")
    else:
        out += keys("parameter", m_a.get("params", {}), m_b.get("params", {}))
        out += keys("model", {k: v for k, v in m_a.items() if k not in ("name", "params")},
                    {k: v for k, v in m_b.items() if k not in ("name", "params")})
    return tuple(out) or ("its trials' identity",)
