"""Rank-list similarity of exported runs of the same queries.

For every query both runs answer, with ``A`` and ``B`` its two lists (best first):

- ``rbo``: RBO_ext with persistence ``p`` (Webber et al. 2010, eq. 32; lists may differ in
  length);
- ``average_overlap``: ``AO = (1/d) sum_{i<=d} |A[:i] ∩ B[:i]| / i`` over the shorter list's
  length ``d`` (what CASPER's code, Oh et al. 2022, reports as "RBO");
- ``frbo``: FRBO@k of Betello et al. 2023, ``RBO@k / (1 - p^k)``; NaN when a list holds fewer
  than ``k`` items (never silently re-normalised);
- ``jaccard``: ``|A[:k] ∩ B[:k]| / |A[:k] ∪ B[:k]|``.

Queries present in one run only are an error unless ``missing="skip"``.

Decisions (:func:`summarize`, :func:`compare_pairs`): the queries are the sampling units
(one run is one fit: no seed-to-seed variation can be read from two files). Each measure's
mean gets a 95 % t-interval over queries and ``p_identical``, the two-sided test that its
mean is 1 (the runs give the same lists) by the protocol of Betello et al. 2023 —
Shapiro-Wilk on the per-query values, then a one-sample t-test or Wilcoxon's signed-rank
test (``recaudit.stats.one_sample_test``). With three runs or more, :func:`compare_pairs`
asks whether the first run is closer to one run than to another, per query and paired,
Holm-adjusted over the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.errors import ConfigError, DataError
from recaudit.runs._read import Run, read_run

__all__ = ["METRICS", "compare_many", "compare_pairs", "compare_runs", "pairwise_matrix",
           "short_labels", "summarize"]

METRICS = ("rbo", "average_overlap", "frbo", "jaccard")


def _as_run(run: Run | str | Path, format: str) -> Run:
    return run if isinstance(run, Run) else read_run(run, format=format)


def _common(a: Run, b: Run, missing: str) -> list[str]:
    qa, qb = a.queries.tolist(), set(b.queries.tolist())
    common = [q for q in qa if q in qb]
    only_a, only_b = len(qa) - len(common), len(qb) - len(common)
    if (only_a or only_b) and missing != "skip":
        ex = [q for q in qa if q not in qb][:3] or [q for q in b.queries.tolist()
                                                    if q not in set(qa)][:3]
        raise DataError(f"{only_a} queries appear only in {a.name} and {only_b} only in "
                        f"{b.name} (e.g. {', '.join(map(repr, ex))})",
                        hint="compare the same queries, or pass --missing skip "
                             "(missing='skip') to compare the shared ones")
    if not common:
        raise DataError(f"{a.name} and {b.name} share no query: nothing to compare")
    if only_a or only_b:
        import warnings

        from recaudit.errors import RecauditWarning

        warnings.warn(f"skipped {only_a + only_b} queries present in one run only "
                      f"({only_a} only in {a.name}, {only_b} only in {b.name}); compared "
                      f"the {len(common)} shared", RecauditWarning, stacklevel=3)
    return common


def _metrics(la: list[np.ndarray], lb: list[np.ndarray], k: int, p: float) -> dict:
    from recaudit import metrics as M

    n = len(la)
    out = {m: np.full(n, np.nan) for m in METRICS}
    widths = np.array([(len(x), len(y)) for x, y in zip(la, lb)], dtype=np.int64).reshape(n, 2)
    for wa, wb in np.unique(widths, axis=0):
        rows = np.flatnonzero((widths[:, 0] == wa) & (widths[:, 1] == wb))
        if wa == 0 or wb == 0:
            raise DataError("a run lists no item for some query; every query needs a list")
        a = np.stack([la[r] for r in rows])
        b = np.stack([lb[r] for r in rows])
        out["rbo"][rows] = M.rbo_batch(a, b, p=p, variant="ext")
        out["average_overlap"][rows] = M.average_overlap_batch(a, b)
        out["jaccard"][rows] = M.jaccard_batch(a, b, k=k)
        if min(wa, wb) >= k:
            out["frbo"][rows] = M.frbo_batch(a, b, k=k, p=p)
    return out


def _check(k: int, p: float, missing: str) -> None:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k = {k!r} must be an integer >= 1")
    if not 0.0 < p < 1.0:
        raise ConfigError(f"p = {p!r} must lie in (0, 1) (RBO's persistence)")
    if missing not in ("error", "skip"):
        raise ConfigError(f"missing = {missing!r} must be 'error' or 'skip'")


def compare_runs(a: Run | str | Path, b: Run | str | Path, k: int = 10, p: float = 0.9, *,
                 missing: str = "error", format: str = "auto") -> pd.DataFrame:
    """Per-query similarity of two runs: columns ``query, rbo, average_overlap, frbo,
    jaccard``, one row per shared query in ``a``'s order (see the module docstring)."""
    _check(k, p, missing)
    ra, rb = _as_run(a, format), _as_run(b, format)
    common = _common(ra, rb, missing)
    da, db = ra.lists(), rb.lists()
    codes: dict[str, int] = {}
    enc = [np.fromiter((codes.setdefault(i, len(codes)) for i in d[q]), dtype=np.int32)
           for d in (da, db) for q in common]
    values = _metrics(enc[:len(common)], enc[len(common):], k, p)
    return pd.DataFrame({"query": common, **values})


def short_labels(names: Sequence[str]) -> list[str]:
    """Short, distinct labels of runs named by their paths: the folders all share in front
    and the path parts all share at the end dropped, then the extension all share
    (``out/gru4rec/seed-0/baseline.csv``, ``out/gru4rec/seed-0/seed-only.csv``,
    ``out/gru4rec/seed-1/baseline.csv`` -> ``seed-0/baseline``, ``seed-0/seed-only``,
    ``seed-1/baseline``). Every label keeps at least one part; a path given twice is
    numbered (``x (2)``)."""
    parts = [Path(str(n)).as_posix().split("/") for n in names]
    if len(set(map(tuple, parts))) > 1:
        while all(len(x) > 1 for x in parts) and len({x[0] for x in parts}) == 1:
            parts = [x[1:] for x in parts]
        while all(len(x) > 1 for x in parts) and len({x[-1] for x in parts}) == 1 \
                and len({tuple(x[:-1]) for x in parts}) == len({tuple(x) for x in parts}):
            parts = [x[:-1] for x in parts]
        suffixes = {Path(x[-1]).suffix for x in parts}
        if len(suffixes) == 1 and "" not in suffixes \
                and all(Path(x[-1]).stem for x in parts):
            parts = [x[:-1] + [Path(x[-1]).stem] for x in parts]
    labels = ["/".join(x) for x in parts]
    seen: dict[str, int] = {}
    for j, label in enumerate(labels):  # the same file twice: number the repeats
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[j] = f"{label} ({seen[label]})"
    return labels


def compare_many(runs: Sequence[Run | str | Path], k: int = 10, p: float = 0.9, *,
                 missing: str = "error", format: str = "auto",
                 labels: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`compare_runs` of every pair (``run_a`` before ``run_b`` in the given order):
    the per-query rows with the two runs' labels in front: ``labels`` (one per run,
    distinct), else :func:`short_labels` of their paths (of a :class:`Run`, its name)."""
    _check(k, p, missing)
    if labels is not None:
        labels = [str(x) for x in labels]
        if len(labels) != len(runs):
            raise ConfigError(f"{len(labels)} labels for {len(runs)} runs: give one label per "
                              "run, in the same order")
        again = next((x for i, x in enumerate(labels) if x in labels[:i]), None)
        if again is not None:
            raise ConfigError(f"the label {again!r} is given to two runs; labels must be "
                              "distinct")
    loaded = [_as_run(r, format) for r in runs]
    if len(loaded) < 2:
        raise ConfigError("compare needs at least two runs")
    names = list(labels) if labels is not None else short_labels(
        [r.name if isinstance(r, Run) else str(r) for r in runs])
    frames = []
    for i, j in combinations(range(len(loaded)), 2):
        df = compare_runs(loaded[i], loaded[j], k, p, missing=missing)
        df.insert(0, "run_b", names[j])
        df.insert(0, "run_a", names[i])
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _decide(values: pd.Series) -> dict:
    from recaudit.stats import one_sample_test

    x = values.to_numpy(dtype=np.float64)
    x = x[~np.isnan(x)]
    if not len(x):
        return {"ci_low": np.nan, "ci_high": np.nan, "p_identical": np.nan}
    test = one_sample_test(x, 1.0)
    low, high = test.interval()
    return {"ci_low": max(0.0, 1.0 + low), "ci_high": min(1.0, 1.0 + high),
            "p_identical": test.p}


def summarize(per_query: pd.DataFrame) -> pd.DataFrame:
    """Mean of each metric over queries (``frbo`` over the queries where it is defined),
    per pair of runs when the frame has ``run_a``/``run_b``; with query counts, and per
    metric ``M_ci_low``/``M_ci_high`` (95 % over queries, clipped to [0, 1]) and
    ``M_p_identical`` (module docstring)."""
    keys = [c for c in ("run_a", "run_b") if c in per_query]
    groups = per_query.groupby(keys, sort=False) if keys else [((), per_query)]
    rows = []
    for key, g in groups:
        row = dict(zip(keys, key if isinstance(key, tuple) else (key,)))
        for m in METRICS:
            row[m] = g[m].mean()
            row.update({f"{m}_{k}": v for k, v in _decide(g[m]).items()})
        row["queries"] = len(g)
        row["frbo_queries"] = int(g["frbo"].count())
        rows.append(row)
    return pd.DataFrame(rows)


def compare_pairs(per_query: pd.DataFrame, metric: str = "rbo") -> pd.DataFrame:
    """For :func:`compare_many`'s rows of three runs or more: is the first run closer to
    ``run_b`` than to ``run_c``? One row per two other runs with the mean per-query
    difference ``sim(first, b) - sim(first, c)`` of ``metric``, its 95 % interval, the
    test used (paired t or Wilcoxon after Shapiro-Wilk) and Holm-adjusted ``p``. The
    queries are those both pairs share."""
    from recaudit.stats import holm, paired_test

    if metric not in METRICS:
        raise ConfigError(f"metric {metric!r} is not one of {', '.join(METRICS)}")
    first = per_query["run_a"].iloc[0]
    mine = per_query[per_query["run_a"] == first]
    others = list(dict.fromkeys(mine["run_b"]))
    rows = []
    for b, c in combinations(others, 2):
        x = mine[mine["run_b"] == b].set_index("query")[metric]
        y = mine[mine["run_b"] == c].set_index("query")[metric]
        shared = x.index.intersection(y.index)
        test = paired_test(x.loc[shared].to_numpy(), y.loc[shared].to_numpy())
        low, high = test.interval()
        rows.append({"reference": first, "run_b": b, "run_c": c, "metric": metric,
                     "difference": test.difference, "ci_low": low, "ci_high": high,
                     "test": test.test, "p": test.p, "queries": test.pairs})
    out = pd.DataFrame(rows)
    if len(out):
        out["p"] = holm(out["p"].to_numpy())
    return out


def pairwise_matrix(per_query: pd.DataFrame, metric: str = "rbo") -> pd.DataFrame:
    """Symmetric matrix of a metric's mean for every pair of runs (1 on the diagonal)."""
    if metric not in METRICS:
        raise ConfigError(f"metric {metric!r} is not one of {', '.join(METRICS)}")
    means = summarize(per_query)
    names = list(dict.fromkeys([*means["run_a"], *means["run_b"]]))
    m = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
    for _, row in means.iterrows():
        m.loc[row["run_a"], row["run_b"]] = m.loc[row["run_b"], row["run_a"]] = row[metric]
    return m
