"""Exported runs: rank lists written by other tools, read and compared.

- :func:`read_run` / :class:`Run` -- TREC run files, CSV/Parquet tables, RecBole top-k files;
- :func:`compare_runs` -- per-query RBO, average overlap, FRBO@k and Jaccard@k of two runs of
  the same queries (also ``recaudit.compare_runs`` and ``recaudit compare``);
- :func:`compare_many`, :func:`pairwise_matrix`, :func:`summarize` -- several runs at once;
  :func:`summarize` gives each mean its 95 % interval over queries and the test that the runs
  agree, :func:`compare_pairs` tests per query whether one run is closer to a reference;
  runs are labelled by the short, distinct part of their paths (:func:`short_labels`).
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.runs._compare import (METRICS, compare_many, compare_pairs, compare_runs,
                                        pairwise_matrix, short_labels, summarize)
    from recaudit.runs._read import RUN_FORMATS, Run, read_run

__getattr__, __dir__ = exports(__name__, {
    "._compare": ("METRICS", "compare_many", "compare_pairs", "compare_runs", "pairwise_matrix",
                  "short_labels", "summarize"),
    "._read": ("RUN_FORMATS", "Run", "read_run"),
})

__all__ = ["METRICS", "RUN_FORMATS", "Run", "compare_many", "compare_pairs", "compare_runs",
           "pairwise_matrix", "read_run", "short_labels", "summarize"]
