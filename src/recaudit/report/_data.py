"""Everything the report reads from a store, loaded once (numbers only, no rendering)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from recaudit.report._labels import PerturbationInfo, parse_label

__all__ = ["ReportData", "load"]

#: Trial means averaged over seeds for the tables and figures.
SUMMARY_METRICS = ["rbo", "frbo", "jaccard", "average_overlap", "mrr_base", "mrr_pert",
                   "hit_base", "hit_pert", "ndcg_base", "ndcg_pert"]


@dataclass
class ReportData:
    """The numbers of one audit store.

    ``summary`` is :func:`recaudit.audit.trial_summary` (one row per trial), ``agg`` its
    :func:`recaudit.audit.seed_summary` (mean/std over seeds), ``trials`` the raw trials
    table, ``meta`` the store's key/value facts. Per-query views (distributions, user groups,
    significance tests) are computed on demand from the store at ``path``.
    """

    path: Path
    summary: pd.DataFrame
    agg: pd.DataFrame
    trials: pd.DataFrame
    meta: dict[str, Any]
    infos: dict[str, PerturbationInfo] = field(default_factory=dict)
    _groups: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

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
        order = [_label(p) for p in self.config.get("perturbations", [])]
        ordered = [p for p in order if p in present] + [p for p in present if p not in order]
        return sorted(ordered, key=lambda p: self.infos[p].reference)

    def main_perturbations(self, dataset: str | None = None) -> list[str]:
        """The perturbations compared at one edit budget (seed 000 Table 3): no ``none``,
        no position removal, and of a counted family (``casper-delete``,
        ``casper-delete-4``, ...) only its smallest count; ``seed-only`` stays (last)."""
        perts = self.perturbations(dataset)
        out = []
        for p in perts:
            info = self.infos[p]
            if p == "none" or info.position is not None:
                continue
            if info.count is not None:
                family = [q for q in perts if q == info.family
                          or (self.infos[q].family == info.family
                              and self.infos[q].position is None)]
                counts = [self.infos[q].count or 1 for q in family]
                if info.family in family or info.count > min(counts):
                    continue
            out.append(p)
        return out

    def counts(self, dataset: str | None = None) -> pd.DataFrame:
        """Counted perturbations: ``perturbation``, ``family``, ``count`` for every family
        run at two or more counts (a plain family label counts as 1)."""
        perts = [p for p in self.perturbations(dataset) if self.infos[p].position is None]
        counted = {self.infos[p].family for p in perts if self.infos[p].count is not None}
        rows = [(p, self.infos[p].family if self.infos[p].count is not None else p,
                 self.infos[p].count or 1) for p in perts
                if self.infos[p].count is not None or p in counted]
        df = pd.DataFrame(rows, columns=["perturbation", "family", "count"])
        return df[df.groupby("family")["count"].transform("nunique") >= 2] \
            .reset_index(drop=True)

    @cached_property
    def distribution(self) -> pd.DataFrame:
        from recaudit.audit._analysis import query_distribution

        return query_distribution(self.path, ("rbo", "frbo", "jaccard"))

    def user_groups(self, metric: str) -> pd.DataFrame:
        """:func:`recaudit.audit.user_groups` of ``metric`` (computed once)."""
        from recaudit.audit import user_groups

        if metric not in self._groups:
            self._groups[metric] = user_groups(self.path, metric)
        return self._groups[metric]


def _label(perturbation: Any) -> str:
    if isinstance(perturbation, str):
        return perturbation
    from recaudit.audit._spec import canonical_json

    return canonical_json(perturbation)


def load(store: str | Path) -> ReportData:
    """Read an audit store (read-only) into a :class:`ReportData`."""
    from recaudit.audit import Store, seed_summary, trial_summary

    path = Path(store)
    with Store(path, read_only=True) as s:
        trials = s.trials()
        meta = s.meta()
        summary = trial_summary(s)
    if not len(summary):
        from recaudit.errors import RecauditError

        raise RecauditError(f"the audit store {path} has no finished trials yet; run the audit "
                            "first (recaudit run CONFIG)")
    summary = summary.dropna(subset=["rbo"]).reset_index(drop=True)
    agg = seed_summary(summary, SUMMARY_METRICS)
    infos = {p: parse_label(p) for p in summary["perturbation"].unique()}
    for col in ("versions", "spec"):
        if col in trials:
            trials[col] = trials[col].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    return ReportData(path, summary, agg, trials, meta, infos)
