"""Everything the report reads from a results file, loaded once (numbers only, no rendering).

A file may hold any mix of: stability-audit trials (tables ``trials``/``query_results``),
property-template studies (``meta`` keys ``properties.table`` and ``properties.evolving``, from
``recaudit properties --store``), fuzzing trials (``fuzz_trials``/``fuzz_meta``, from
``recaudit fuzz``) and MIRROR results (``mirror_results``, from ``recaudit simulate mirror
--out``). :attr:`ReportData.kinds` names the ones present.
"""

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
    fuzz: pd.DataFrame | None = None
    fuzz_meta: dict[str, Any] = field(default_factory=dict)
    mirror: pd.DataFrame | None = None
    _groups: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

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
    """Read a results file (read-only) into a :class:`ReportData`; any of its kinds may be
    missing, but not all of them."""
    from recaudit.audit import Store, seed_summary, trial_summary
    from recaudit.errors import RecauditError

    path = Path(store)
    fuzz_meta: dict[str, Any] = {}
    mirror = None
    with Store(path, read_only=True) as s:
        tables = {r[0] for r in s.con.execute("SHOW TABLES").fetchall()}
        audit = {"trials", "query_results", "meta"} <= tables
        trials = s.trials() if audit else pd.DataFrame()
        meta = s.meta() if "meta" in tables else {}
        summary = trial_summary(s) if len(trials) else pd.DataFrame()
        if "fuzz_meta" in tables:
            fuzz_meta = {k: json.loads(v) if isinstance(v, str) else v for k, v in
                         s.con.execute("SELECT key, value FROM fuzz_meta").fetchall()}
        if "mirror_results" in tables:
            mirror = s.con.execute("SELECT * FROM mirror_results").df()
    fuzz = None
    if "fuzz_trials" in tables:
        from recaudit.fuzz import load_results

        fuzz = load_results(path)
    if len(summary):
        summary = summary.dropna(subset=["rbo"]).reset_index(drop=True)
        agg = seed_summary(summary, SUMMARY_METRICS)
    else:
        summary, agg = pd.DataFrame(), pd.DataFrame()
    infos = {p: parse_label(p) for p in summary["perturbation"].unique()} if len(summary) else {}
    for col in ("versions", "spec"):
        if col in trials:
            trials[col] = trials[col].map(lambda v: json.loads(v) if isinstance(v, str) else v)
    data = ReportData(path, summary, agg, trials, meta, infos, fuzz, fuzz_meta, mirror)
    if not data.kinds:
        raise RecauditError(
            f"{path} holds no finished trials yet and no other results: nothing to report. "
            "Run an audit (recaudit run CONFIG), a fuzzing study (recaudit fuzz -o FILE), "
            "the MIRROR benchmark (recaudit simulate mirror --out FILE) or a property study "
            "(recaudit properties --store FILE) into it first")
    return data
