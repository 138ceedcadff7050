"""Readers and writers of interaction files: CSV/TSV, Parquet and the :func:`read` dispatcher.

Format-specific readers (RecBole, JODIE, MovieLens, the shared TSVs, Foursquare, Jester) live in
:mod:`recaudit.data._formats`; they use :func:`read_raw` and :func:`build` from here so every
reader reports problems the same way (:class:`DataError` naming file, 1-based line counting the
header, column and a hint).

Writers never leave a half-written file: they write a temporary file next to the target and
move it into place with :func:`os.replace` only once it is complete.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data._interactions import Interactions
from recaudit.data._validate import validate_frame
from recaudit.errors import DataError

__all__ = ["read", "read_csv", "read_parquet", "write_csv", "write_parquet", "detect_format",
           "sniff_delimiter", "FORMATS"]

_SNIFF = ("\t", ",", ";", " ")
_PARQUET_KEY = b"recaudit"
_HEADER_WORDS = {"user", "item", "timestamp", "rating", "user_id", "item_id", "userid",
                 "itemid", "movieid", "time", "score"}


# ---------------------------------------------------------------------------------- helpers
def atomic_write(path: str | os.PathLike, write: Callable[[str], None]) -> None:
    """Call ``write(tmp_path)`` and move the result to ``path``; on failure remove the temp."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _head_lines(path: str | os.PathLike, n: int = 20, encoding: str = "utf-8") -> list[str]:
    """The first ``n`` non-empty lines of a text file (without line ends)."""
    out: list[str] = []
    with open(path, encoding=encoding, errors="replace", newline="") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if line.strip():
                out.append(line)
                if len(out) >= n:
                    break
    return out


def _split(line: str, sep: str) -> list[str]:
    return line.split() if sep == " " else line.split(sep)


def sniff_delimiter(lines: Sequence[str]) -> str | None:
    """The delimiter among tab, comma, semicolon and space that splits every line alike.

    A candidate qualifies when it gives the same number (> 1) of fields on every sampled line;
    among qualifying candidates the order tab, comma, semicolon, space decides. If none
    qualifies the candidate with the most fields on the first line wins; ``None`` when no
    candidate occurs at all.
    """
    if not lines:
        return None
    counts = {s: [len(_split(ln, s)) for ln in lines] for s in _SNIFF}
    for sep in _SNIFF:
        c = counts[sep]
        if c[0] > 1 and all(x == c[0] for x in c):
            return sep
    best = max(_SNIFF, key=lambda s: counts[s][0])
    return best if counts[best][0] > 1 else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _infer_header(lines: list[str], sep: str, columns: Any) -> bool:
    first = [f.strip().strip('"') for f in _split(lines[0], sep)]
    if isinstance(columns, Mapping):
        names = [v for v in columns.values() if isinstance(v, str)]
        if names and all(v in first for v in names):
            return True
    if isinstance(columns, Sequence) and not isinstance(columns, str):
        return [f.lower() for f in first] == [str(c).lower() for c in columns]
    if any(f.lower() in _HEADER_WORDS for f in first):
        return True
    if len(lines) > 1:
        second = [f.strip().strip('"') for f in _split(lines[1], sep)]
        return any(not _is_number(a) and _is_number(b) for a, b in zip(first, second))
    return False


def _pandas_sep(sep: str) -> str:
    return r"\s+" if sep == " " else sep


def read_raw(
    source: str | os.PathLike | io.StringIO,
    *,
    sep: str,
    header: bool,
    names: Sequence[Any] | None = None,
    usecols: Sequence[int] | None = None,
    skiprows: int = 0,
    encoding: str = "utf-8",
    label: str | None = None,
    quoting: int = 0,
) -> tuple[pd.DataFrame, int]:
    """Parse a delimited text file into a raw DataFrame; return it and its first data line.

    Blank lines are kept while parsing so line numbers stay right; trailing blank lines are
    dropped and a blank line inside the data is an error. Parser errors become
    :class:`DataError` with the line pandas reports.
    """
    label = label or str(source)
    try:
        df = pd.read_csv(source, sep=_pandas_sep(sep), header=0 if header else None,
                         usecols=usecols, skiprows=skiprows,
                         skip_blank_lines=False, encoding=encoding, engine="c",
                         quoting=quoting)
    except pd.errors.EmptyDataError:
        raise DataError("file is empty", source=label,
                        hint="the file must hold one interaction per line") from None
    except pd.errors.ParserError as exc:
        m = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if m:
            raise DataError(f"expected {m[1]} fields, saw {m[3]}", source=label, line=int(m[2]),
                            hint=f"check the delimiter (sep={sep!r}) and quoting on that line"
                            ) from None
        raise DataError(f"cannot parse: {exc}", source=label,
                        hint=f"check the delimiter (sep={sep!r}) and quoting") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"cannot decode the file as {encoding}: {exc.reason}", source=label,
                        hint="pass encoding='latin-1' (or the file's encoding)") from None
    first_line = skiprows + (2 if header else 1)
    if names is not None:  # set names only after checking the width (pandas would silently
        if df.shape[1] != len(names):  # turn an extra leading field into an index)
            raise DataError(f"expected {len(names)} fields ({', '.join(map(str, names))}), "
                            f"found {df.shape[1]}", source=label, line=first_line,
                            hint=f"check the delimiter (sep={sep!r}) and the file's layout")
        df.columns = list(names)
    if len(df):
        blank = df.isna().all(axis=1).to_numpy()
        if blank.any():
            last = len(df) - (np.flatnonzero(~blank)[-1] + 1 if (~blank).any() else 0)
            df = df.iloc[: len(df) - last]
            inner = np.flatnonzero(blank[: len(df)])
            if len(inner):
                raise DataError("empty line inside the data", source=label,
                                line=first_line + int(inner[0]), hint="remove the empty line")
    return df, first_line


def build(
    df: pd.DataFrame,
    columns: Mapping[str, Any] | None,
    *,
    source: str,
    first_line: int | None,
    duplicates: str = "keep",
    require_rating: bool = False,
    item_attributes: Mapping[Any, Any] | None = None,
    name: str | None = None,
) -> Interactions:
    """Validate a raw frame (errors carry file lines) and encode it as :class:`Interactions`."""
    frame = validate_frame(df, columns, duplicates=duplicates, require_rating=require_rating,
                           source=source, first_line=first_line)
    return Interactions.from_df(frame, item_attributes=item_attributes,
                                name=name or Path(source).stem, source=source)


# ---------------------------------------------------------------------------------- CSV
_POSITIONAL = {2: ["user", "item"], 3: ["user", "item", "timestamp"],
               4: ["user", "item", "rating", "timestamp"]}


def read_csv(
    path: str | os.PathLike,
    *,
    sep: str | None = None,
    header: bool | str = "infer",
    columns: Mapping[str, Any] | Sequence[str] | None = None,
    duplicates: str = "keep",
    require_rating: bool = False,
    encoding: str = "utf-8",
    item_attributes: Mapping[Any, Any] | None = None,
    name: str | None = None,
) -> Interactions:
    """Read a delimited text file (CSV, TSV, …) into :class:`Interactions`.

    Parameters
    ----------
    sep:
        Delimiter; ``None`` sniffs tab, comma, semicolon or whitespace (``" "`` means any run
        of whitespace) from the first 20 lines (see :func:`sniff_delimiter`).
    header:
        ``True``, ``False`` or ``"infer"``: a header is assumed when the first line contains
        a role-like name (``user``, ``item_id``, ``timestamp`` …), the names given in
        ``columns``, or a non-numeric field above a numeric one.
    columns:
        With a header: mapping ``role -> column name``. Without a header: a list of names for
        the columns (roles are the names equal to ``user``, ``item``, ``timestamp``,
        ``rating``; other columns are ignored) or a mapping ``role -> 0-based position``.
        Headerless files without ``columns`` are read positionally: 2 columns ``user item``,
        3 ``user item timestamp``, 4 ``user item rating timestamp`` (the MovieLens order).
    duplicates, require_rating:
        See :func:`recaudit.data.validate_frame`.
    """
    label = str(path)
    if not os.path.exists(path):
        raise DataError("file not found", source=label, hint="check the path")
    lines = _head_lines(path, encoding=encoding)
    if not lines:
        raise DataError("file is empty", source=label,
                        hint="the file must hold one interaction per line")
    if sep is None:
        sep = sniff_delimiter(lines)
        if sep is None:
            raise DataError("cannot detect the delimiter (only one column)", source=label,
                            line=1, hint="pass sep=',' or sep='\\t'")
    if header not in (True, False, "infer"):
        raise ValueError(f"header must be True, False or 'infer', got {header!r}")
    has_header = _infer_header(lines, sep, columns) if header == "infer" else bool(header)
    names = None
    roles: Mapping[str, Any] | None = None
    if isinstance(columns, Mapping):
        roles = columns
    elif columns is not None:
        names = list(columns)
    df, first_line = read_raw(path, sep=sep, header=has_header, names=names, encoding=encoding)
    if df.shape[1] == 1:
        others = [s for s in (",", "\t", ";", "|", "::") if s != sep and s in lines[0]]
        raise DataError(f"only one column found with sep={sep!r}", source=label, line=1,
                        hint=(f"looks like the delimiter is {others[0]!r}; pass sep={others[0]!r}"
                              if others else "pass the right sep="))
    if not has_header and names is None:
        if roles is not None and all(isinstance(v, (int, np.integer)) for v in roles.values()):
            pass  # positions are the integer column labels pandas assigns
        elif roles is not None:
            raise DataError("the file has no header but columns refers to names", source=label,
                            hint="pass columns as a list of names, or as {role: position}")
        elif df.shape[1] in _POSITIONAL:
            df.columns = _POSITIONAL[df.shape[1]]
        else:
            raise DataError(f"headerless file with {df.shape[1]} columns", source=label, line=1,
                            hint="pass columns=[...] naming each column (use 'user', 'item', "
                                 "'timestamp', 'rating' for the roles)")
    return build(df, roles, source=label, first_line=first_line, duplicates=duplicates,
                 require_rating=require_rating, item_attributes=item_attributes, name=name)


def write_csv(log: Interactions, path: str | os.PathLike, *, sep: str = ",") -> None:
    """Write ``user, item, timestamp[, rating]`` with original ids and a header (atomically).

    Item attributes and ids without interactions are not kept (use Parquet for a full
    round trip).
    """
    df = log.to_df()
    atomic_write(path, lambda tmp: df.to_csv(tmp, sep=sep, index=False))


# ---------------------------------------------------------------------------------- Parquet
def _jsonable(ids: np.ndarray) -> list | None:
    values = ids.tolist()
    if all(isinstance(v, (int, str)) for v in values):
        return values
    return None


def write_parquet(log: Interactions, path: str | os.PathLike) -> None:
    """Write the log as Parquet (original ids), atomically.

    The file's schema metadata (key ``recaudit``) holds JSON with the log's name, the full
    ``user_ids``/``item_ids`` (so ids without interactions and the code order survive) and the
    item attributes as ``[item id, [labels]]`` pairs; :func:`read_parquet` restores them.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(log.to_df(), preserve_index=False)
    meta: dict[str, Any] = {"format": 1, "name": log.name,
                            "user_ids": _jsonable(log.user_ids),
                            "item_ids": _jsonable(log.item_ids)}
    if log.item_attributes is not None:
        meta["item_attributes"] = [[log.item_ids[code].item() if isinstance(
            log.item_ids[code], np.generic) else log.item_ids[code], sorted(labels)]
            for code, labels in sorted(log.item_attributes.items())]
    schema_meta = dict(table.schema.metadata or {})
    schema_meta[_PARQUET_KEY] = json.dumps(meta).encode()
    table = table.replace_schema_metadata(schema_meta)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def read_parquet(
    path: str | os.PathLike,
    *,
    columns: Mapping[str, Any] | None = None,
    duplicates: str = "keep",
    require_rating: bool = False,
    name: str | None = None,
) -> Interactions:
    """Read a Parquet file; files written by :func:`write_parquet` round-trip exactly.

    Errors name the 0-based row (Parquet has no lines).
    """
    import pyarrow.parquet as pq

    label = str(path)
    if not os.path.exists(path):
        raise DataError("file not found", source=label, hint="check the path")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataError(f"cannot read as Parquet: {exc}", source=label,
                        hint="check that the file is a Parquet file") from None
    raw = (table.schema.metadata or {}).get(_PARQUET_KEY)
    meta = json.loads(raw) if raw else {}
    frame = validate_frame(table.to_pandas(), columns, duplicates=duplicates,
                           require_rating=require_rating, source=label)
    name = name or meta.get("name") or Path(label).stem
    user_ids, item_ids = meta.get("user_ids"), meta.get("item_ids")
    attrs_raw = meta.get("item_attributes")
    if user_ids is not None and item_ids is not None:
        uid, iid = pd.Index(user_ids), pd.Index(item_ids)
        ucode, icode = uid.get_indexer(frame["user"]), iid.get_indexer(frame["item"])
        if (ucode >= 0).all() and (icode >= 0).all():
            attrs = None
            if attrs_raw is not None:
                pos = iid.get_indexer([a[0] for a in attrs_raw])
                attrs = {int(p): frozenset(a[1]) for p, a in zip(pos, attrs_raw) if p >= 0}
            rating = frame["rating"].to_numpy() if "rating" in frame else None
            return Interactions(ucode, icode, frame["timestamp"].to_numpy(), rating,
                                np.asarray(user_ids), np.asarray(item_ids), attrs, name)
    attrs = {a[0]: a[1] for a in attrs_raw} if attrs_raw is not None else None
    return Interactions.from_df(frame, item_attributes=attrs, name=name, source=label)


# ---------------------------------------------------------------------------------- dispatch
def _formats() -> dict[str, Callable[..., Interactions]]:
    from recaudit.data import _formats as f

    return {"csv": read_csv, "tsv": lambda p, **kw: read_csv(p, **{"sep": "\t", **kw}),
            "parquet": read_parquet, "recbole": f.read_recbole, "jodie": f.read_jodie,
            "movielens": f.read_movielens, "tsv-shared": f.read_tsv_shared,
            "foursquare-tsmc": f.read_foursquare_tsmc, "jester": f.read_jester}


#: Names accepted by ``read(path, format=...)``.
FORMATS: tuple[str, ...] = ("csv", "tsv", "parquet", "recbole", "jodie", "movielens",
                            "tsv-shared", "foursquare-tsmc", "jester")


def detect_format(path: str | os.PathLike) -> str:
    """Guess the format of ``path`` from its name, extension and first line."""
    p = Path(path)
    name = p.name.lower()
    if p.is_dir():
        if any((p / f).exists() for f in ("u.data", "ratings.dat", "ratings.csv")):
            return "movielens"
        if any(p.glob("*.inter")):
            return "recbole"
        raise DataError("cannot tell the format of this directory", source=str(p),
                        hint="pass format=... or the path of the interaction file")
    if name in ("u.data", "ratings.dat") or (name == "ratings.csv"):
        return "movielens"
    if name in ("wikipedia.tsv", "foursquare.tsv"):
        return "tsv-shared"
    if name.startswith("dataset_tsmc2014"):
        return "foursquare-tsmc"
    if name == "jester_ratings.dat":
        return "jester"
    if p.suffix.lower() in (".parquet", ".pq"):
        return "parquet"
    if p.suffix.lower() == ".inter":
        return "recbole"
    first = _head_lines(p, 1) if p.exists() else []
    if first and first[0].lower().startswith("user_id,item_id,timestamp,state_label"):
        return "jodie"
    if first and p.suffix.lower() == ".dat" and "::" in first[0]:
        return "movielens"
    return "tsv" if p.suffix.lower() == ".tsv" else "csv"


def read(path: str | os.PathLike, format: str | None = None, **opts: Any) -> Interactions:
    """Read any supported file; ``format`` (one of :data:`FORMATS`) or detected from the name.

    Keyword options are passed to the format's reader (e.g. ``duplicates="drop"``).
    """
    fmt = format or detect_format(path)
    readers = _formats()
    if fmt not in readers:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if not Path(path).exists():
        raise DataError("file not found", source=str(path), hint="check the path")
    return readers[fmt](path, **opts)

