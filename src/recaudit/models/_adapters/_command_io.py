"""The files a command model exchanges with its program: queries in, rank lists out.

Queries (``{queries}``, Parquet), one row per query: ``query`` (``0..n-1``), ``user`` (original
id), ``timestamp`` (when the next item is asked for), ``context`` (list of original item ids,
oldest first) and ``context_timestamp`` (their times). The ground truth is never written.

Output (``{output}``, Parquet), one row per recommended item, either

- ``query, rank, item`` -- ordered by ``rank`` (distinct integers per query, any start), or
- ``query, item, score`` -- ordered by decreasing ``score``, ties by the item's catalogue
  order (the sorted training ids), so equal scores still give one deterministic list;

with both ``rank`` and ``score`` the order is the ranks' and the scores must not increase
along it. Items are original ids of the training catalogue. A list longer than ``k`` is cut
to ``k``; lists are rectangular, so every list is cut to the shortest one (as
:func:`~recaudit.models.top_k_from_scores` does).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.data import Queries, RankLists
from recaudit.data import RankedRowsError, order_ranked_rows
from recaudit.errors import RecauditError

__all__ = ["CommandError", "write_queries", "read_rank_output"]


class CommandError(RecauditError):
    """A command model's program failed or wrote something unusable."""


def write_queries(queries: Queries, user_ids: np.ndarray, item_ids: np.ndarray,
                  path: Path) -> None:
    """Write ``queries`` with original ids as the rank command's ``{queries}`` file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    offsets = pa.array(queries.context_indptr.astype(np.int32))
    items = pa.array(item_ids[queries.context_item])
    times = pa.array(queries.context_time)
    table = pa.table({"query": pa.array(np.arange(len(queries), dtype=np.int64)),
                      "user": pa.array(user_ids[queries.user]),
                      "timestamp": pa.array(queries.timestamp),
                      "context": pa.ListArray.from_arrays(offsets, items),
                      "context_timestamp": pa.ListArray.from_arrays(offsets, times)})
    pq.write_table(table, path)


def _id(value):
    """A numpy scalar id as a plain Python value (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _fail(where: str, message: str, hint: str | None = None) -> CommandError:
    text = f"{where}: {message}"
    return CommandError(text + (f"\n  hint: {hint}" if hint else ""))


def _read_frame(path: Path, where: str) -> pd.DataFrame:
    import pyarrow.parquet as pq

    if not path.exists():
        raise _fail(where, "the command exited 0 but wrote no output file",
                    "write the rank lists as Parquet to the path given as {output}")
    try:
        return pq.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise _fail(where, f"not a readable Parquet file ({type(exc).__name__}: {exc})",
                    "write the rank lists with pandas.DataFrame.to_parquet or pyarrow") from exc


def _int_column(df: pd.DataFrame, col: str, where: str) -> np.ndarray:
    values = df[col]
    if values.isna().any():
        row = int(np.flatnonzero(values.isna().to_numpy())[0]) + 1
        raise _fail(where, f"column {col!r} is empty in data row {row}")
    if values.dtype.kind not in "iu":
        as_float = pd.to_numeric(values, errors="coerce")
        bad = as_float.isna() | (as_float != np.floor(as_float))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0]) + 1
            raise _fail(where, f"column {col!r} must hold integers; data row {row} has "
                               f"{values.iloc[row - 1]!r}")
        values = as_float
    return values.to_numpy().astype(np.int64)


def read_rank_output(path: Path, where: str, n_queries: int, item_ids: np.ndarray,
                     k: int) -> RankLists:
    """Parse and validate the rank command's output (see the module docstring).

    ``where`` names the command and the file in every error message.
    """
    df = _read_frame(path, where)
    cols = set(df.columns)
    if "query" not in cols or "item" not in cols or not cols & {"rank", "score"}:
        raise _fail(where, f"columns {sorted(map(str, df.columns))}; expected (query, rank, item)"
                           " or (query, item, score)")
    if len(df) == 0:
        raise _fail(where, "the output has no rows")
    query = _int_column(df, "query", where)
    unknown_q = (query < 0) | (query >= n_queries)
    if unknown_q.any():
        row = int(np.flatnonzero(unknown_q)[0]) + 1
        raise _fail(where, f"data row {row} answers query {query[row - 1]}, which was not asked "
                           f"(queries are 0..{n_queries - 1})")
    missing = np.setdiff1d(np.arange(n_queries), query)
    if len(missing):
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        raise _fail(where, f"no rows for {len(missing)} of the {n_queries} queries ({shown})",
                    "answer every query of the {queries} file")
    if df["item"].isna().any():
        row = int(np.flatnonzero(df["item"].isna().to_numpy())[0]) + 1
        raise _fail(where, f"column 'item' is empty in data row {row}")
    codes = pd.Index(item_ids).get_indexer(df["item"].to_numpy())
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0]) + 1
        raise _fail(where, f"data row {row} (query {query[row - 1]}) names item "
                           f"{_id(df['item'].iloc[row - 1])!r}, which is not in the training catalogue",
                    f"write original item ids of the training file (dtype {item_ids.dtype}); "
                    "a model cannot recommend items it was never given")
    score = None
    if "score" in cols:
        score = pd.to_numeric(df["score"], errors="coerce").to_numpy(np.float64)
        if np.isnan(score).any():
            row = int(np.flatnonzero(np.isnan(score))[0]) + 1
            raise _fail(where, f"column 'score' is missing or not a number in data row {row}")
    rank = _int_column(df, "rank", where) if "rank" in cols else None
    try:
        order = order_ranked_rows(query, codes, rank=rank, score=score,
                                  item_label=lambda c: _id(item_ids[c]))
    except RankedRowsError as exc:
        raise _fail(where, str(exc)) from None
    q_sorted, c_sorted = query[order], codes[order]
    counts = np.bincount(q_sorted, minlength=n_queries)
    depth = int(min(k, counts.min()))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    take = starts[:, None] + np.arange(depth)[None, :]
    items = c_sorted[take].astype(np.int32)
    scores = None
    if score is not None:
        scores = score[order][take].astype(np.float32)
        if (np.diff(scores, axis=1) > 0).any():
            q = int(np.flatnonzero((np.diff(scores, axis=1) > 0).any(axis=1))[0])
            raise _fail(where, f"query {q}: scores increase along the ranks",
                        "give ranks that follow the scores, or drop one of the two columns")
    return RankLists(items, scores)
