"""The :func:`read` dispatcher: any supported file, format given or detected from the name."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recaudit.data import _published as f
from recaudit.data._interactions import Interactions
from recaudit.data._plain import read_csv, read_parquet
from recaudit.data._text import head_lines
from recaudit.errors import DataError, did_you_mean

__all__ = ["FORMATS", "detect_format", "read"]


def _formats() -> dict[str, Callable[..., Interactions]]:
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
    first = head_lines(p, 1) if p.exists() else []
    if name in ("u.data", "ratings.dat") or (
            name == "ratings.csv" and first and first[0].lower().startswith("userid,movieid")):
        return "movielens"  # a ratings.csv of one's own (no MovieLens header) is a plain CSV
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
    if first and first[0].lower().startswith("user_id,item_id,timestamp,state_label"):
        return "jodie"
    if first and p.suffix.lower() == ".dat" and "::" in first[0]:
        return "movielens"
    return "tsv" if p.suffix.lower() == ".tsv" else "csv"


#: The options that describe a delimited text file's layout: a file they are given for is
#: read as plain text (:func:`read`).
_LAYOUT = ("sep", "header", "columns")


def _takes(reader: Callable[..., Interactions]) -> set[str] | None:
    """The keyword options ``reader`` accepts (None: any, ``**kwargs``)."""
    import inspect

    params = inspect.signature(reader).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind is p.KEYWORD_ONLY
            or (p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty)}


def read(path: str | os.PathLike, format: str | None = None, **opts: Any) -> Interactions:
    """Read any supported file; ``format`` (one of :data:`FORMATS`) or detected from the name.

    Keyword options are passed to the format's reader (e.g. ``duplicates="drop"``). A file
    whose format was detected as a published release's (MovieLens, the CASPER TSVs, ...)
    but given layout options (``sep``, ``header``, ``columns``: the reader of that release
    knows its own layout) is read as the plain CSV (TSV for ``.tsv``) those options describe,
    with a warning; an option the format does not take is otherwise an error naming those it
    does.
    """
    import warnings

    from recaudit.errors import RecauditWarning

    fmt = format or detect_format(path)
    readers = _formats()
    if fmt not in readers:
        raise DataError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}."
                        + did_you_mean(str(fmt), FORMATS), source=str(path))
    if not Path(path).exists():
        raise DataError("file not found", source=str(path), hint="check the path")
    takes = _takes(readers[fmt])
    alien = [k for k in opts if takes is not None and k not in takes]
    if alien and format is None and set(alien) <= set(_LAYOUT) and Path(path).is_file():
        plain = "tsv" if Path(path).suffix.lower() == ".tsv" else "csv"
        warnings.warn(f"{Path(path).name}: read as a plain {plain.upper()} with the given "
                      f"{' and '.join(alien)}, not as the {fmt} release its name says (whose "
                      "reader knows its own layout and takes none)", RecauditWarning,
                      stacklevel=2)
        return readers[plain](path, **opts)
    if alien:
        raise DataError(f"the {fmt} format takes no {', '.join(alien)} option (it takes "
                        f"{', '.join(sorted(takes or ())) or 'none'})", source=str(path),
                        hint="leave the option out: this format's reader knows the file's "
                             "layout" if set(alien) <= set(_LAYOUT) else
                             "check the option's name")
    return readers[fmt](path, **opts)

