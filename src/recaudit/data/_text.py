"""Parsing delimited text into validated logs, shared by every reader.

:func:`read_raw` parses a file into a raw frame keeping line numbers right; :func:`build`
validates it (:func:`~recaudit.data.validate_frame`) and encodes it as :class:`Interactions`,
so every reader reports problems the same way (:class:`DataError` naming file, 1-based line
counting the header, column and a hint).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data._columns import looks_like_header
from recaudit.data._frames import validate_frame
from recaudit.data._interactions import Interactions
from recaudit.errors import DataError, closest

__all__ = ["head_lines", "sniff_delimiter", "infer_header", "read_raw", "build"]

_SNIFF = ("\t", ",", ";", " ")


def head_lines(path: str | os.PathLike, n: int = 20, encoding: str = "utf-8") -> list[str]:
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


def _fields(line: str, sep: str) -> list[str]:
    return [f.strip().strip('"') for f in _split(line, sep)]


def infer_header(lines: list[str], sep: str, columns: Any) -> bool:
    """Whether ``lines[0]`` is a header: it holds a name that ``columns`` (a mapping of roles
    to names) asks for, or one close to it (a typo: the error then says which); it equals
    ``columns`` given as a list of names; or it looks like one
    (:func:`~recaudit.data._columns.looks_like_header`)."""
    first = _fields(lines[0], sep)
    if isinstance(columns, Mapping):
        names = [str(v) for v in columns.values() if isinstance(v, str)]
        if any(closest(n, first, cutoff=0.75) is not None for n in names):
            return True
    if isinstance(columns, Sequence) and not isinstance(columns, str):
        return [f.lower() for f in first] == [str(c).lower() for c in columns]
    return looks_like_header(first, [_fields(ln, sep) for ln in lines[1:]])


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
