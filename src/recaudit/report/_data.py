"""Everything the report reads from a results file, loaded once (numbers only, no rendering).

A file may hold any mix of: stability-audit trials (tables ``trials``/``query_results``),
property-template studies (``meta`` keys ``properties.table`` and ``properties.evolving``, from
``recaudit properties --store``), fuzzing trials (``fuzz_trials``, meta ``fuzz.study`` and
``fuzz.data``, from ``recaudit fuzz``) and MIRROR results (``mirror_results``, from ``recaudit
simulate mirror --out``). :attr:`ReportData.kinds` names the ones present. Everything is read
through :class:`~recaudit.experiment.Store` methods; a trial's perturbation is grouped by the
description stored with it (family, edit, count, position, reference), never by parsing its
label.
"""

from __future__ import annotations

import contextlib
import json
import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from recaudit.audit import floor_of, perturbation_label

__all__ = ["ReportData", "PerturbationInfo", "load"]

@dataclass(frozen=True)
class PerturbationInfo:
    """A trial's perturbation as its store describes it (:class:`recaudit.perturb.Description`).

    ``family`` groups counted perturbations (``casper-delete`` at counts 1, 2, 4), ``count``
    the interactions edited (items removed per user for position removal), ``position`` is
    ``beginning``/``middle``/``end`` for position removal, ``reference`` marks trials that
    change no data (``none``, ``seed-only``).
    """

    label: str
    family: str
    count: int | None = None
    position: str | None = None
    reference: bool = False


def _info(row: Any) -> PerturbationInfo:
    def get(key: str) -> Any:
        v = row.get(key) if hasattr(row, "get") else None
        return None if v is None or (isinstance(v, float) and v != v) or v is pd.NA else v

    count = get("count")
    return PerturbationInfo(str(row["perturbation"]), str(get("family") or row["perturbation"]),
                            None if count is None else int(count), get("position"),
                            bool(get("reference") or False))


@dataclass
class ReportData:
    """The numbers of one audit store.

    ``summary`` is :func:`recaudit.audit.trial_summary` (one row per trial), ``agg``
    :func:`recaudit.audit.summary` (per condition: each measure with its 95 % interval over
    seeds and queries, p-values against the floors; ``model_label`` names the model), ``trials`` the raw trials
    table, ``meta`` the store's key/value facts. Per-query views (distributions, user groups,
    significance tests) are computed on demand from the store at ``path``.
    """

    path: Path
    summary: pd.DataFrame
    agg: pd.DataFrame
    trials: pd.DataFrame
    meta: dict[str, Any]
    infos: dict[str, PerturbationInfo] = field(default_factory=dict)
    fuzz: pd.DataFrame | None = None
    mirror: pd.DataFrame | None = None
    _groups: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)
    _store: Any = field(default=None, repr=False)  # open inside kept_open() only

    @property
    def source(self) -> Any:
        """What the per-query views read: the store opened by :meth:`kept_open` while it
        lasts (one connection for a whole report: opening a store costs some 30 ms, and a
        report asks it a dozen questions), else its path (each view opens it read-only)."""
        return self._store if self._store is not None else self.path

    @contextlib.contextmanager
    def kept_open(self) -> Iterator[None]:
        """The store open read-only for the block (:attr:`source`), closed after it: no
        connection outlives the block (a reader holding the file would block a writer)."""
        if self._store is not None:
            yield
            return
        from recaudit.audit import AuditStore

        with AuditStore(self.path, read_only=True) as s:
            self._store = s
            try:
                yield
            finally:
                self._store = None

    @property
    def has_audit(self) -> bool:
        """Whether the file holds finished stability-audit trials."""
        return len(self.summary) > 0

    @property
    def properties(self) -> dict[str, Any]:
        """The property studies: ``{"table": ..., "evolving": ...}`` where present."""
        return {k.split(".", 1)[1]: v for k, v in self.meta.items()
                if k in ("properties.table", "properties.evolving") and isinstance(v, dict)}

    @property
    def kinds(self) -> list[str]:
        """What the file holds, in words (report order)."""
        out = []
        if self.has_audit:
            out.append(f"stability audit ({len(self.trials)} trials)")
        if "table" in self.properties:
            out.append("property templates (Table 3.4)")
        if "evolving" in self.properties:
            out.append("evolving-dataset study (Table 3.6)")
        if self.fuzz is not None and len(self.fuzz):
            out.append(f"fuzzing study ({len(self.fuzz)} trials)")
        if self.mirror is not None and len(self.mirror):
            out.append(f"MIRROR benchmark ({len(self.mirror)} result rows)")
        return out

    @property
    def fuzz_meta(self) -> dict[str, Any]:
        """The fuzzing study's ``study`` and ``data`` (meta ``fuzz.study``, ``fuzz.data``)."""
        return {k: self.meta[f"fuzz.{k}"] for k in ("study", "data") if f"fuzz.{k}" in self.meta}

    @property
    def config(self) -> dict[str, Any]:
        cfg = self.meta.get("config")
        return cfg if isinstance(cfg, dict) else {}

    @property
    def k(self) -> int | None:
        k = self.config.get("metrics", {}).get("k") if isinstance(
            self.config.get("metrics"), dict) else None
        return int(k) if isinstance(k, int) else None

    @property
    def k_label(self) -> str:
        return f"@{self.k}" if self.k is not None else "@k"

    @property
    def datasets(self) -> list[str]:
        return list(dict.fromkeys(self.summary["dataset"]))

    def models(self, dataset: str | None = None) -> list[str]:
        s = self.summary if dataset is None else self.summary[self.summary.dataset == dataset]
        return list(dict.fromkeys(s["model_label"]))

    def perturbations(self, dataset: str | None = None) -> list[str]:
        """Perturbation labels in config order (then first appearance); references last."""
        s = self.summary if dataset is None else self.summary[self.summary.dataset == dataset]
        present = list(dict.fromkeys(s["perturbation"]))
        order = [perturbation_label(p) for p in self.config.get("perturbations", [])]
        ordered = [p for p in order if p in present] + [p for p in present if p not in order]
        return sorted(ordered, key=lambda p: self.infos[p].reference)

    def main_perturbations(self, dataset: str | None = None) -> list[str]:
        """The perturbations compared at one edit budget (Oh et al. 2022 Table 3): no
        ``rerun`` (or ``none``) floor, no position removal, and of a family run at several
        counts (``casper-delete``, ``casper-delete-k4``, ...) only its smallest count; the
        ``seed-only`` floor stays, last."""
        perts = self.perturbations(dataset)
        smallest: dict[str, int] = {}
        for p in perts:
            info = self.infos[p]
            if info.position is None and not info.reference and info.count is not None:
                smallest[info.family] = min(info.count, smallest.get(info.family, info.count))
        out = []
        for p in perts:
            info = self.infos[p]
            if floor_of(p) == "rerun" or info.position is not None:
                continue
            if info.count is not None and not info.reference \
                    and info.count > smallest[info.family]:
                continue
            out.append(p)
        return out

    def counts(self, dataset: str | None = None) -> pd.DataFrame:
        """Counted perturbations: ``perturbation``, ``family``, ``count`` for every family
        (position removal aside) run at two or more counts."""
        rows = [(p, self.infos[p].family, self.infos[p].count) for p in
                self.perturbations(dataset) if self.infos[p].position is None
                and not self.infos[p].reference and self.infos[p].count is not None]
        df = pd.DataFrame(rows, columns=["perturbation", "family", "count"])
        return df[df.groupby("family")["count"].transform("nunique") >= 2] \
            .reset_index(drop=True)

    @cached_property
    def distribution(self) -> pd.DataFrame:
        from recaudit.audit import query_distribution

        return query_distribution(self.source, ("rbo", "frbo", "jaccard"))

    def most_destabilising(self, metric: str, dataset: str) -> pd.DataFrame:
        """:func:`recaudit.audit.most_destabilising` of ``metric`` among the main
        perturbations of ``dataset`` (floors aside; computed once)."""
        from recaudit.audit import most_destabilising

        key = f"most:{metric}:{dataset}"
        if key not in self._cache:
            perts = [p for p in self.main_perturbations(dataset) if not floor_of(p)]
            out = most_destabilising(self.source, metric=metric, perturbations=perts)
            self._cache[key] = out[out.dataset == dataset] if len(out) else out
        return self._cache[key]

    def user_groups(self, metric: str) -> pd.DataFrame:
        """:func:`recaudit.audit.user_groups` of ``metric`` (computed once)."""
        from recaudit.audit import user_groups

        if metric not in self._groups:
            self._groups[metric] = user_groups(self.source, metric)
        return self._groups[metric]


def _property_meta(store: Any) -> dict[str, Any]:
    """A property study's tables in the shape the report renders (the ``meta`` entries of
    stores written before the property study was a study of its own)."""
    from recaudit.properties import evolving_frames, property_frame, read_values

    def plain(v: Any) -> Any:
        if isinstance(v, frozenset):
            return sorted(v)
        if isinstance(v, tuple):
            return list(v)
        return None if isinstance(v, float) and not math.isfinite(v) else v

    values = read_values(store)
    study = store.meta().get("properties.study", {})
    facts = {"dataset": study.get("dataset", {}).get("name"), "k": study.get("k"),
             "seed": study.get("seed")}
    out: dict[str, Any] = {}
    # an evolving study: the steps of one ``years`` setting (its last step may be Table 3.4's
    # trial, which both studies share)
    evolving = values[values["years"]] if values["years"].any() else values
    table = values[(values["fraction"] == 1) & ~values["years"]]
    if len(table):
        frame = property_frame(table)
        out["properties.table"] = {**facts, "values": {
            m: {p: plain(v) for p, v in frame[m].items()} for m in frame.columns}}
    if evolving["fraction"].nunique() > 1:
        steps, summary = evolving_frames(evolving)
        out["properties.evolving"] = {**facts, "max_abs_percent_change": {
            m: {p: plain(v) for p, v in summary[m].items()} for m in summary.columns},
            "steps": [{k: plain(v) for k, v in r.items()}
                      for r in steps.to_dict(orient="records")]}
    return out


def load(store: str | Path) -> ReportData:
    """Read a results file (read-only) into a :class:`ReportData`; any of its kinds may be
    missing, but not all of them."""
    from recaudit.audit import AuditStore, trial_summary
    from recaudit.audit import summary as decisions
    from recaudit.errors import RecauditError, RecauditWarning
    from recaudit.fuzz import read_trials as fuzz_trials
    from recaudit.simulate import read_results as mirror_results

    path = Path(store)
    with AuditStore(path, read_only=True) as s:
        holds = s.holds()
        trials = s.trials() if holds.get("trials") else pd.DataFrame()
        meta = s.meta()
        summary = trial_summary(s) if len(trials) else pd.DataFrame()
        agg = decisions(s).rename(columns={"model": "model_label"}) if len(trials) \
            else pd.DataFrame()
        fuzz = fuzz_trials(s) if holds.get("fuzz_trials") else None
        mirror = mirror_results(s) if holds.get("mirror_results") else None
        if holds.get("property_values"):
            meta.update(_property_meta(s))
    if len(summary):
        summary = summary.dropna(subset=["rbo"]).reset_index(drop=True)
        agg = agg.dropna(subset=["rbo"]).reset_index(drop=True)
    else:
        summary, agg = pd.DataFrame(), pd.DataFrame()
    if len(trials) and "family" not in trials:
        warnings.warn(f"{path} was written by an older recaudit: its trials carry no "
                      "perturbation description, so counted and position-removal sections "
                      "group by label only", RecauditWarning, stacklevel=2)
    infos = {str(r["perturbation"]): _info(r) for r in
             trials.drop_duplicates("perturbation").to_dict(orient="records")} \
        if len(trials) else {}
    for col in ("versions", "spec"):
        if col in trials:
            trials[col] = trials[col].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    data = ReportData(path, summary, agg, trials, meta, infos, fuzz, mirror)
    if not data.kinds:
        raise RecauditError(
            f"{path} holds no finished trials yet and no other results: nothing to report. "
            "Run an audit (recaudit run CONFIG), a fuzzing study (recaudit fuzz -o FILE), "
            "the MIRROR benchmark (recaudit simulate mirror --out FILE) or a property study "
            "(recaudit properties --store FILE) into it first")
    return data
