"""Readers for the published formats of recommender data sets.

Each returns :class:`Interactions` and reports problems as :class:`DataError` naming the file and
the 1-based line (counting header lines). Only the interaction columns are kept; item metadata
that is a set of labels (genres, categories) becomes ``item_attributes``.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data._interactions import Interactions
from recaudit.data._text import build, head_lines, read_raw
from recaudit.errors import DataError

__all__ = ["read_recbole", "read_jodie", "read_movielens", "read_tsv_shared",
           "read_foursquare_tsmc", "read_jester"]

#: Genre names of MovieLens-100k in the order of the flags in ``u.item`` (as in ``u.genre``).
ML100K_GENRES = ("unknown", "Action", "Adventure", "Animation", "Children's", "Comedy", "Crime",
                 "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical", "Mystery",
                 "Romance", "Sci-Fi", "Thriller", "War", "Western")
_ATTRIBUTE_FIELDS = ("genre", "genres", "class", "category", "categories")


def _exists(path: str | os.PathLike) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError("file not found", source=str(p), hint="check the path")
    return p


# ---------------------------------------------------------------------------------- RecBole
def _recbole_header(path: Path) -> list[tuple[str, str]]:
    lines = head_lines(path, 1)
    if not lines:
        raise DataError("file is empty", source=str(path), hint="a RecBole atomic file starts "
                        "with a header such as 'user_id:token\\titem_id:token'")
    fields = []
    for raw in lines[0].split("\t"):
        name, colon, kind = raw.strip().partition(":")
        if not colon:
            raise DataError(f"header field {raw!r} has no ':type'", source=str(path), line=1,
                            column=raw, hint="RecBole atomic headers look like "
                            "'user_id:token\\titem_id:token\\ttimestamp:float'")
        fields.append((name, kind))
    return fields


def _read_recbole_items(path: Path, id_field: str, attribute: str | None) -> dict[Any, list]:
    fields = _recbole_header(path)
    names = [n for n, _ in fields]
    if id_field not in names:
        raise DataError(f"item id field {id_field!r} missing", source=str(path), line=1,
                        hint=f"fields are {', '.join(names)}")
    if attribute is None:
        attribute = next((n for n in _ATTRIBUTE_FIELDS if n in names), None)
        if attribute is None:
            attribute = next((n for n, k in fields if k == "token_seq" and "title" not in n
                              and "name" not in n), None)
        if attribute is None:
            return {}
    elif attribute not in names:
        raise DataError(f"attribute field {attribute!r} missing", source=str(path), line=1,
                        hint=f"fields are {', '.join(names)}")
    df, _ = read_raw(path, sep="\t", header=False, names=names, skiprows=1,
                     quoting=csv.QUOTE_NONE, label=str(path))
    out: dict[Any, list] = {}
    for iid, value in zip(df[id_field].tolist(), df[attribute].tolist()):
        if isinstance(value, str) and value.strip():
            out[iid] = value.split()
    return out


def read_recbole(
    path_inter: str | os.PathLike,
    path_item: str | os.PathLike | bool | None = None,
    *,
    columns: Mapping[str, str] | None = None,
    item_attribute: str | None = None,
    duplicates: str = "keep",
    require_rating: bool = False,
    name: str | None = None,
) -> Interactions:
    """Read RecBole atomic files (``.inter`` and optionally ``.item``).

    The header gives ``name:type`` per field. Roles default to the RecBole names ``user_id``,
    ``item_id``, ``rating``, ``timestamp`` (override with ``columns``, role -> field name).
    ``path_item=None`` uses the sibling ``<stem>.item`` when it exists (``False`` disables);
    its ``genre``/``class``/``category`` field (or ``item_attribute``), a space-separated
    ``token_seq``, becomes the item attributes.
    """
    p = _exists(path_inter)
    fields = _recbole_header(p)
    names = [n for n, _ in fields]
    roles = {r: f for r, f in (("user", "user_id"), ("item", "item_id"), ("rating", "rating"),
                                ("timestamp", "timestamp")) if f in names}
    roles.update(columns or {})
    df, first = read_raw(p, sep="\t", header=False, names=names, skiprows=1,
                         quoting=csv.QUOTE_NONE, label=str(p))
    attrs = None
    if path_item is None:
        sibling = p.with_suffix(".item")
        path_item = sibling if sibling.exists() else False
    if path_item is not False and path_item is not True:
        attrs = _read_recbole_items(_exists(path_item), roles.get("item", "item_id"),
                                    item_attribute)
    return build(df, roles, source=str(p), first_line=first, duplicates=duplicates,
                 require_rating=require_rating, item_attributes=attrs, name=name or p.stem)


# ---------------------------------------------------------------------------------- JODIE
def read_jodie(path: str | os.PathLike, *, duplicates: str = "keep",
               name: str | None = None) -> Interactions:
    """Read a JODIE release CSV (Kumar et al., KDD 2019: wikipedia, reddit, lastfm, mooc).

    Header ``user_id,item_id,timestamp,state_label,comma_separated_list_of_features``; each
    row then has the user, item, timestamp (float seconds), a state label and any number of
    feature columns, which are ignored.
    """
    p = _exists(path)
    head = head_lines(p, 1)
    if not head:
        raise DataError("file is empty", source=str(p), hint="expected a JODIE CSV")
    fields = [f.strip() for f in head[0].split(",")]
    if fields[:3] != ["user_id", "item_id", "timestamp"]:
        raise DataError(f"not a JODIE header: {head[0][:60]!r}", source=str(p), line=1,
                        hint="expected 'user_id,item_id,timestamp,state_label,...'; use "
                             "read_csv for other CSV files")
    df, first = read_raw(p, sep=",", header=False, usecols=[0, 1, 2], skiprows=1, label=str(p))
    df.columns = ["user", "item", "timestamp"]
    return build(df, None, source=str(p), first_line=first, duplicates=duplicates,
                 name=name or p.stem)


# ---------------------------------------------------------------------------------- MovieLens
def _ml100k_genres(data: Path) -> dict[Any, list[str]] | None:
    item_file = data.with_name("u.item")
    if not item_file.exists():
        return None
    genre_file = data.with_name("u.genre")
    names = list(ML100K_GENRES)
    if genre_file.exists():
        pairs = [ln.split("|") for ln in genre_file.read_text(encoding="latin-1").splitlines()
                 if "|" in ln]
        names = [g for g, _ in sorted(pairs, key=lambda gi: int(gi[1]))]
    out: dict[Any, list[str]] = {}
    for line in item_file.read_text(encoding="latin-1").splitlines():
        parts = line.split("|")
        if len(parts) < 5 + len(names):
            continue
        flags = parts[-len(names):]
        out[int(parts[0])] = [g for g, f in zip(names, flags) if f.strip() == "1"]
    return out


_NO_GENRE = "(no genres listed)"
_YEAR = re.compile(r"\((\d{4})\)\s*$")


def _movies(path: Path, sep: str, encoding: str) -> list[tuple[Any, str, str]]:
    """``(movieId, title, genres)`` of a ``movies.dat`` (``sep="::"``) or ``movies.csv``."""
    if sep == "::":
        rows = [ln.split("::") for ln in path.read_text(encoding=encoding).splitlines() if ln]
        return [(int(r[0]), r[1], r[-1]) for r in rows if len(r) >= 3]
    movies = pd.read_csv(path, encoding=encoding)
    return list(zip(movies["movieId"].tolist(), movies["title"].astype(str).tolist(),
                    movies["genres"].tolist(), strict=True))


def _movies_genres(path: Path, sep: str, encoding: str, no_genre: str | None = None
                   ) -> dict[Any, list[str]] | None:
    if not path.exists():
        return None
    return {mid: [no_genre] if str(gs) == _NO_GENRE and no_genre is not None else
            [g for g in str(gs).split("|") if g and g != _NO_GENRE]
            for mid, _, gs in _movies(path, sep, encoding)}


def _movie_file(ratings: Path) -> tuple[Path, str, str] | None:
    """The item file next to a MovieLens ratings file: ``(path, separator, encoding)``."""
    for name, sep, enc in (("movies.csv", ",", "utf-8"), ("movies.dat", "::", "latin-1")):
        if (ratings.with_name(name)).exists():
            return ratings.with_name(name), sep, enc
    return None


def read_release_years(path: str | os.PathLike, item_ids: np.ndarray) -> np.ndarray:
    """Release year of every item id (float64; NaN when unknown) from the ``(YYYY)`` at the
    end of its title in the ``movies.csv`` / ``movies.dat`` next to MovieLens ratings
    ``path`` (Shriver 2018 §3.5.2 restricts each step to the movies released by then)."""
    p = _exists(path)
    found = _movie_file(p if p.is_file() else p / "ratings.csv")
    if found is None:
        raise DataError("no movies.csv or movies.dat next to the ratings: release years "
                        "unknown", source=str(p), hint="use a MovieLens release with its "
                                                       "movie file")
    years = {mid: float(m.group(1)) for mid, title, _ in _movies(*found)
             if (m := _YEAR.search(title.strip()))}
    return np.array([years.get(i, np.nan) for i in np.asarray(item_ids).tolist()],
                    dtype=np.float64)


def read_movielens(path: str | os.PathLike, *, duplicates: str = "keep",
                   require_rating: bool = True, genres: bool = True,
                   catalogue: bool = False, no_genre: str | None = None,
                   name: str | None = None) -> Interactions:
    """Read a MovieLens release: ``u.data`` (100K), ``ratings.dat`` (1M/10M) or ``ratings.csv``.

    ``path`` may also be the release's directory. Genres become item attributes when the
    release's item file is next to the ratings: ``u.item`` (+ ``u.genre``) for ``u.data``,
    ``movies.dat`` for ``ratings.dat``, ``movies.csv`` for ``ratings.csv`` (genres ``a|b|c``;
    ``(no genres listed)`` gives no attribute, or the attribute ``no_genre`` when given).
    ``catalogue``: every movie of the item file is an item, rated or not (the unrated ones
    take the codes after the rated ones, so rated codes do not change) — the universe of
    Shriver 2018 §3.1, where a model may recommend a movie nobody rated.
    """
    p = _exists(path)
    if p.is_dir():
        found = next((p / f for f in ("ratings.csv", "ratings.dat", "u.data")
                      if (p / f).exists()), None)
        if found is None:
            raise DataError("no u.data, ratings.dat or ratings.csv in this directory",
                            source=str(p), hint="pass the path of the ratings file")
        p = found
    label = str(p)
    head = head_lines(p, 1, encoding="latin-1")
    if not head:
        raise DataError("file is empty", source=label, hint="expected MovieLens ratings")
    names = ["user", "item", "rating", "timestamp"]
    attrs = None
    if "::" in head[0]:
        text = p.read_text(encoding="latin-1").replace("::", "\t")
        df, first = read_raw(io.StringIO(text), sep="\t", header=False, names=names, label=label)
        if genres:
            attrs = _movies_genres(p.with_name("movies.dat"), "::", "latin-1", no_genre)
    elif head[0].lower().startswith("userid"):
        df, first = read_raw(p, sep=",", header=True, label=label)
        df = df.rename(columns={"userId": "user", "movieId": "item"})
        if genres:
            attrs = _movies_genres(p.with_name("movies.csv"), ",", "utf-8", no_genre)
    else:
        df, first = read_raw(p, sep="\t", header=False, names=names, label=label)
        if genres:
            attrs = _ml100k_genres(p)
    log = build(df, None, source=label, first_line=first, duplicates=duplicates,
                require_rating=require_rating, item_attributes=attrs,
                name=name or p.parent.name or p.stem)
    return _with_catalogue(log, p, no_genre) if catalogue else log


def _with_catalogue(log: Interactions, ratings: Path, no_genre: str | None) -> Interactions:
    found = _movie_file(ratings)
    if found is None:
        raise DataError("catalogue=True needs the movies.csv or movies.dat next to the ratings",
                        source=str(ratings), hint="leave catalogue off, or add the movie file")
    rated = set(log.item_ids.tolist())
    extra = sorted({mid for mid, _, _ in _movies(*found)} - rated)
    item_ids = np.concatenate([log.item_ids, np.asarray(extra, dtype=log.item_ids.dtype)])
    attrs = dict(log.item_attributes or {})
    if log.item_attributes is not None:
        genres = _movies_genres(*found, no_genre)  # the unrated movies' attributes, same rules
        index = {mid: c for c, mid in enumerate(item_ids.tolist())}
        for mid in extra:
            attrs[index[mid]] = frozenset((genres or {}).get(mid, ()))
    return log.replace(item_ids=item_ids, item_attributes=attrs if attrs else None)


# ---------------------------------------------------------------------------------- shared TSVs
def read_tsv_shared(path: str | os.PathLike, *, duplicates: str = "keep",
                    name: str | None = None) -> Interactions:
    """Read the headerless TSVs of the CASPER/FINEST releases (Oh et al. 2022's data).

    Four columns are ``row_id, user, item, timestamp`` (``wikipedia.tsv``), three are
    ``user, item, timestamp`` (``foursquare.tsv``); the column count decides.
    """
    p = _exists(path)
    head = head_lines(p, 1)
    if not head:
        raise DataError("file is empty", source=str(p), hint="expected a headerless TSV")
    n = len(head[0].split("\t"))
    layouts = {4: ["row_id", "user", "item", "timestamp"], 3: ["user", "item", "timestamp"]}
    if n not in layouts:
        raise DataError(f"expected 3 or 4 tab-separated columns, found {n}", source=str(p),
                        line=1, hint="use read_csv(path, columns=[...]) for other layouts")
    df, first = read_raw(p, sep="\t", header=False, names=layouts[n], label=str(p))
    return build(df, None, source=str(p), first_line=first, duplicates=duplicates,
                 name=name or p.stem)


# ---------------------------------------------------------------------------------- Foursquare
_TSMC_TIME = "%a %b %d %H:%M:%S %z %Y"


def read_foursquare_tsmc(path: str | os.PathLike, *, duplicates: str = "keep",
                         encoding: str = "latin-1", name: str | None = None) -> Interactions:
    """Read ``dataset_TSMC2014_{NYC,TKY}.txt`` (Yang et al., IEEE TSMC 2015).

    Eight tab-separated columns without header: user, venue, venue category id, venue category
    name, latitude, longitude, timezone offset, UTC time (``Tue Apr 03 18:00:09 +0000 2012``).
    Items are venues; timestamps are UTC seconds since the epoch (``int64``); each venue's
    category names become its item attributes.
    """
    p = _exists(path)
    names = ["user", "item", "category_id", "category", "lat", "lon", "tz", "utc_time"]
    df, first = read_raw(p, sep="\t", header=False, names=names, encoding=encoding,
                         quoting=csv.QUOTE_NONE, label=str(p))
    when = pd.to_datetime(df["utc_time"], format=_TSMC_TIME, utc=True, errors="coerce")
    bad = np.flatnonzero(when.isna().to_numpy())
    if len(bad):
        raise DataError(f"cannot parse UTC time {df['utc_time'].iloc[bad[0]]!r}", source=str(p),
                        line=first + int(bad[0]), column="utc_time",
                        hint="expected e.g. 'Tue Apr 03 18:00:09 +0000 2012'")
    frame = pd.DataFrame({"user": df["user"], "item": df["item"],
                          "timestamp": pd.DatetimeIndex(when).as_unit("s").asi8})
    attrs: dict[Any, set[str]] = {}
    for venue, cat in zip(df["item"].tolist(), df["category"].tolist()):
        if isinstance(cat, str):
            attrs.setdefault(venue, set()).add(cat)
    return build(frame, None, source=str(p), first_line=first, duplicates=duplicates,
                 item_attributes=attrs, name=name or p.stem)


# ---------------------------------------------------------------------------------- Jester
def read_jester(path: str | os.PathLike, *, duplicates: str = "keep",
                name: str | None = None) -> Interactions:
    """Read Jester dataset 2 ``jester_ratings.dat`` (Goldberg et al., 2001).

    Whitespace-separated ``user item rating`` with ratings in [-10, 10] (negative ratings are
    valid here). The release has **no timestamps**: the file's row order is used
    (``0..n-1``), so temporal splits of Jester follow file order only.
    """
    p = _exists(path)
    df, first = read_raw(p, sep=" ", header=False, names=["user", "item", "rating"],
                         label=str(p))
    return build(df, None, source=str(p), first_line=first, duplicates=duplicates,
                 require_rating=False, name=name or p.stem)
