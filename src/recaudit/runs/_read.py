"""Reading exported runs: rank lists of some queries, as other tools write them.

A :class:`Run` holds, for each query id, its items best first. Query and item ids are kept as
text, so runs written by different tools (TREC's string ids, a CSV's integers) compare.

Formats (``format="auto"`` picks by extension, then by content):

- ``trec``: ``qid Q0 docid rank score tag`` per line, whitespace separated. Ordered exactly as
  trec_eval orders them (``form_res_rels.c``, ``comp_sim_docno``): the rank column is read
  but ignored; score descending, compared as a C ``float`` (float32); ties by docid in
  *descending* byte order.
- ``csv`` (``,`` ``;`` tab or space) and ``parquet``: a header with ``query`` (or ``qid``,
  ``user``, ``user_id``), ``item`` (or ``docid``, ``item_id``) and ``rank`` (ascending) or
  ``score`` (descending, ties by item id ascending); with both, the ranks decide.
- ``recbole``: a RecBole atomic-style file, tab separated, header of typed fields, e.g.
  ``user_id:token <TAB> item_id_list:token_seq [<TAB> score_list:float_seq]``: one line per
  user with the space-separated top-k item tokens best first -- what ``full_sort_topk`` plus
  ``dataset.id2token`` gives, written in RecBole's own file convention.

Every problem is a :class:`~recaudit.errors.DataError` naming the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.data import RankedRowsError, order_ranked_rows
from recaudit.errors import DataError

__all__ = ["Run", "read_run", "RUN_FORMATS"]

RUN_FORMATS = ("auto", "trec", "csv", "parquet", "recbole")
_QUERY = ("query", "qid", "user", "user_id")
_ITEM = ("item", "docid", "item_id")


@dataclass(frozen=True, eq=False)
class Run:
    """Rank lists of a set of queries: query ``q``'s items are
    ``items[indptr[j]:indptr[j+1]]`` with ``j`` its position in ``queries``."""

    name: str
    queries: np.ndarray
    indptr: np.ndarray
    items: np.ndarray

    def __len__(self) -> int:
        return len(self.queries)

    def lists(self) -> dict[str, np.ndarray]:
        return {q: self.items[self.indptr[j]:self.indptr[j + 1]]
                for j, q in enumerate(self.queries.tolist())}

    @classmethod
    def from_lists(cls, lists: dict, name: str = "run") -> Run:
        """A run from ``{query: [items best first]}`` (ids turned into text)."""
        queries = np.array([str(q) for q in lists], dtype=object)
        lens = [len(v) for v in lists.values()]
        indptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        items = np.array([str(i) for v in lists.values() for i in v], dtype=object)
        return cls(name, queries, indptr, items)


def _text(values) -> np.ndarray:
    """Ids as text; integral floats lose their ``.0`` (a CSV column with gaps reads as float)."""
    s = pd.Series(values)
    if s.dtype.kind == "f" and np.all(np.isfinite(s)) and np.all(s == np.floor(s)):
        s = s.astype(np.int64)
    return s.astype(str).to_numpy(dtype=object)


def _build(name: str, query: np.ndarray, item: np.ndarray, rank, score, ties: str,
           source: str, row) -> Run:
    qcodes, qids = pd.factorize(query, sort=False)
    icodes, iids = pd.factorize(item, sort=True)
    try:
        order = order_ranked_rows(qcodes, icodes, rank=rank, score=score, ties=ties, row=row,
                                  item_label=lambda c: iids[c], query_label=lambda q: qids[q])
    except RankedRowsError as exc:
        raise DataError(str(exc), source=source,
                        hint="a query may list an item once, at one rank") from None
    counts = np.bincount(qcodes, minlength=len(qids))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Run(name, np.asarray(qids, dtype=object), indptr,
               np.asarray(iids, dtype=object)[icodes[order]])


def _read_trec(path: Path) -> Run:
    qs, docs, ranks, scores, lines = [], [], [], [], []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != 6:
                raise DataError(f"expected 6 fields 'qid Q0 docid rank score tag', found "
                                f"{len(fields)}", source=str(path), line=n,
                                hint="is this a TREC run? pass --format csv for a table")
            try:
                rank, score = int(fields[3]), float(fields[4])
            except ValueError:
                raise DataError(f"rank {fields[3]!r} must be an integer and score {fields[4]!r} "
                                "a number", source=str(path), line=n) from None
            qs.append(fields[0])
            docs.append(fields[2])
            ranks.append(rank)
            scores.append(score)
            lines.append(n)
    if not qs:
        raise DataError("the run file is empty", source=str(path))
    # trec_eval keeps sim in a C float: scores equal in float32 tie
    score32 = np.asarray(scores, dtype=np.float32).astype(np.float64)
    _say_reordered(path, qs, ranks, score32)
    return _build(path.name, np.array(qs, dtype=object), np.array(docs, dtype=object), None,
                  score32, "descending", str(path), lambda i: f"line {lines[i]}")


def _say_reordered(path: Path, qs: list, ranks: list, score: np.ndarray) -> None:
    """Warn when trec_eval's order differs from what the file seems to say: tied scores
    (ordered by docid) or a rank column that disagrees with the scores (ignored)."""
    import warnings

    from recaudit.errors import RecauditWarning

    df = pd.DataFrame({"q": qs, "rank": ranks, "s": score})
    tied = df[df.duplicated(["q", "s"], keep=False)].q.nunique()
    by_rank = df.sort_values(["q", "rank"], kind="stable")
    rising = by_rank.groupby("q", sort=False).s.diff() > 0
    disagree = by_rank[rising].q.nunique()
    if tied or disagree:
        warnings.warn(f"{path.name}: {tied} queries have tied scores and {disagree} a rank "
                      "column that disagrees with the scores; ordered as trec_eval orders "
                      "them (score descending, then docid in descending byte order; the rank "
                      "column is ignored)", RecauditWarning, stacklevel=4)


def _column(df: pd.DataFrame, names: tuple[str, ...], what: str, source: str) -> str:
    lower = {str(c).lower(): c for c in df.columns}
    for n in names:
        if n in lower:
            return lower[n]
    raise DataError(f"no {what} column (looked for {', '.join(names)}); columns are "
                    f"{[str(c) for c in df.columns]}", source=source,
                    hint="name the columns query, item and rank or score")


def _from_table(df: pd.DataFrame, path: Path, first_line: int) -> Run:
    source = str(path)
    row = (lambda i: f"line {i + first_line}") if first_line else (lambda i: f"row {i + 1}")
    qcol = _column(df, _QUERY, "query", source)
    icol = _column(df, _ITEM, "item", source)
    lower = {str(c).lower(): c for c in df.columns}
    rank = score = None
    if "rank" in lower:
        r = pd.to_numeric(df[lower["rank"]], errors="coerce")
        bad = r.isna() | (r != np.floor(r))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"rank {df[lower['rank']].iloc[i]!r} is not an integer",
                            source=source, line=i + first_line if first_line else None,
                            column=str(lower["rank"]))
        rank = r.to_numpy().astype(np.int64)
    elif "score" in lower:
        s = pd.to_numeric(df[lower["score"]], errors="coerce")
        if s.isna().any():
            i = int(np.flatnonzero(s.isna().to_numpy())[0])
            raise DataError(f"score {df[lower['score']].iloc[i]!r} is not a number",
                            source=source, line=i + first_line if first_line else None,
                            column=str(lower["score"]))
        score = s.to_numpy(np.float64)
    else:
        raise DataError("no rank or score column: the order of the items is unknown",
                        source=source, hint="add a rank (1 = best) or a score column")
    for col in (qcol, icol):
        if df[col].isna().any():
            i = int(np.flatnonzero(df[col].isna().to_numpy())[0])
            raise DataError("empty value", source=source, column=str(col),
                            line=i + first_line if first_line else None)
    return _build(path.name, _text(df[qcol]), _text(df[icol]), rank, score, "ascending",
                  source, row)


def _read_csv(path: Path) -> Run:
    from recaudit.data import head_lines, sniff_delimiter

    try:
        sep = sniff_delimiter(head_lines(path)) or ","
        df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
    except DataError:
        raise
    except Exception as exc:  # pandas' parser errors carry the line in their text
        raise DataError(f"cannot read as a table: {exc}", source=str(path)) from exc
    if len(df) == 0:
        raise DataError("the run file has no rows", source=str(path))
    return _from_table(df, path, first_line=2)


def _read_parquet(path: Path) -> Run:
    import pyarrow.parquet as pq

    try:
        df = pq.read_table(path).to_pandas()
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataError(f"not a readable Parquet file ({exc})", source=str(path)) from exc
    if len(df) == 0:
        raise DataError("the run file has no rows", source=str(path))
    return _from_table(df, path, first_line=0)


def _read_recbole(path: Path) -> Run:
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().rstrip("\r\n").split("\t")
        types = [h.split(":", 1)[1] if ":" in h else "" for h in header]
        if "token" not in types or "token_seq" not in types:
            raise DataError(f"RecBole header {header} needs a user field ':token' and an item "
                            "list field ':token_seq'", source=str(path), line=1,
                            hint="e.g. user_id:token<TAB>item_id_list:token_seq")
        u, it = types.index("token"), types.index("token_seq")
        lists: dict[str, list[str]] = {}
        for n, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            fields = line.rstrip("\r\n").split("\t")
            if len(fields) != len(header):
                raise DataError(f"{len(fields)} fields, the header has {len(header)}",
                                source=str(path), line=n)
            user, items = fields[u], fields[it].split()
            if user in lists:
                raise DataError(f"user {user!r} appears twice", source=str(path), line=n)
            if len(set(items)) != len(items):
                dup = next(i for i in items if items.count(i) > 1)
                raise DataError(f"user {user!r} lists item {dup!r} twice", source=str(path),
                                line=n)
            lists[user] = items
    if not lists:
        raise DataError("the run file has no rows", source=str(path))
    run = Run.from_lists(lists, name=path.name)
    return run


def _sniff(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return "parquet"
    with open(path, "rb") as fh:
        if fh.read(4) == b"PAR1":
            return "parquet"
    with open(path, encoding="utf-8", errors="replace") as fh:
        first = next((ln for ln in fh if ln.strip()), "")
    if ":token" in first:
        return "recbole"
    fields = first.split()
    if len(fields) == 6 and fields[3].lstrip("-").isdigit():
        return "trec"
    return "csv"


def read_run(path: str | Path, format: str = "auto") -> Run:
    """Read a run file (see the module docstring for the formats)."""
    path = Path(path)
    if format not in RUN_FORMATS:
        raise DataError(f"unknown run format {format!r}; use one of {', '.join(RUN_FORMATS)}",
                        source=str(path))
    if not path.is_file():
        raise DataError("no such file", source=str(path))
    fmt = _sniff(path) if format == "auto" else format
    reader = {"trec": _read_trec, "csv": _read_csv, "parquet": _read_parquet,
              "recbole": _read_recbole}[fmt]
    return reader(path)
