"""A record's samples on disk, compact: ``samples.parquet`` beside ``record.json``.

The claims and the intervals of the published values are tested on the per-(replicate, unit)
values of the measures they read (:class:`recaudit.reproduce.Measures`); nothing else of the
samples is kept (a value's companions, ``also``, are shown as means, which ``record.json``
holds at full precision). The file is *wide*: one row per (replicate, unit) — ``replicate``
and ``unit`` as strings — and one column per measure key, null where that key was not
measured (another dataset's queries, the draws >= 1 of a perturbation that draws nothing).
Each key's rows keep their order (the first key's order, then the rows new to each next key),
so the values read back come in the order they were measured.

Values of a key with few distinct values (at most :data:`EXACT_DISTINCT`, and at most a
quarter of its rows: hit rates, Jaccard@k, modification-set counts) are kept exact, float64 in
a Parquet dictionary, and so are those of a small key (at most :data:`EXACT_ROWS` values: user
groups, Shriver 2018's sets, Zhu et al. 2023's seeds), whose bytes do not matter: the ties of
rationals such as reciprocal ranks or mean Jaccard indices, which a rank test reads, stay what
they were. The other keys' values (overlaps over whole rank lists, nearly all distinct, by the
tens of thousands) are stored as float32, seven significant digits (a relative error below
6e-8): equal values stay equal, so a paired difference that is zero stays zero, the page's
differences and intervals (four decimals, three significant digits) do not move, and no
claim's state does (``tests/reproduce/test_samples.py``); but a rank test's p-value can move
in its second significant digit where float32 reorders differences that were within 1e-7 of
one another (e.g. 8.2e-300 against 7.8e-300). A run evaluates its claims on the samples as
stored, so a record's verdict is the page's. A key that varies but would be constant in
float32, or whose values lie beyond its range, stays float64. The float32 columns are written
with Parquet's byte-stream split, all with zstd (level 19): Oh et al. 2022's Table 3 at the
paper's scale, 64 measure keys over 18,340 test queries and one seed, takes about 3 MB instead
of 25.5.

No file exceeds :data:`MAX_BYTES`: a larger record is written in parts, ``samples.parquet``
then ``samples-1.parquet``, ``samples-2.parquet``..., each with some of the keys (in order)
and their rows.

:func:`read_samples` also reads the long layout of earlier records (``key, replicate, unit,
value``, float64); :func:`recaudit.reproduce.compact_records` rewrites a folder of records
in the compact form (a one-off migration: ``recaudit reproduce compact``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["EXACT_DISTINCT", "EXACT_ROWS", "MAX_BYTES", "SAMPLES", "keys_read",
           "read_samples", "sample_files", "write_samples"]

#: The samples file beside each ``record.json`` (the first part, where there are several).
SAMPLES = "samples.parquet"
#: The largest samples file written: under the 8 MB a file the repository keeps to.
MAX_BYTES = 7_500_000
#: A key with at most this many distinct values (and at most a quarter of its rows), or with
#: at most ``EXACT_ROWS`` values, is kept exact (module docstring).
EXACT_DISTINCT = 65_536
EXACT_ROWS = 4_096
_INDEX = ("replicate", "unit")
_LEVEL = 19


def keys_read(exp) -> list[str]:
    """The measure keys whose samples ``exp``'s claims and values read: the claims' keys and
    the published values' own keys (their interval), in that order; a value's companions
    (``also``) are shown as means only."""
    keys = [k for c in exp.claims for k in c.keys] + [v.key for v in exp.values]
    return list(dict.fromkeys(keys))


def _column(values: np.ndarray) -> np.ndarray:
    """float32, unless that loses what a test reads (module docstring): the ties of a key
    with few distinct values, a value beyond float32's range, the variation of a key that
    varies."""
    v64 = np.asarray(values, dtype=np.float64)
    distinct = len(np.unique(v64))
    if len(v64) <= EXACT_ROWS or (distinct <= EXACT_DISTINCT and 4 * distinct <= len(v64)):
        return v64
    with np.errstate(over="ignore"):
        v32 = v64.astype(np.float32)
    ok = np.isfinite(v64)
    if not np.array_equal(np.isfinite(v32), ok):
        return v64
    if ok.any() and np.ptp(v64[ok]) > 0 and np.ptp(v32[ok]) == 0:
        return v64
    return v32


def _wide(samples: Mapping[str, pd.DataFrame], keys) -> pd.DataFrame:
    """One row per (replicate, unit), one column per key (module docstring)."""
    wanted = [k for k in keys if k in samples and len(samples[k])]
    rows: dict[tuple[str, str], int] = {}
    cols: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for k in wanted:
        f = samples[k]
        pairs = list(zip(f["replicate"].astype(str), f["unit"].astype(str), strict=True))
        if len(set(pairs)) != len(pairs):
            raise ValueError(f"samples of {k!r}: a (replicate, unit) pair appears twice")
        at = np.fromiter((rows.setdefault(p, len(rows)) for p in pairs), dtype=np.int64,
                         count=len(pairs))
        cols[k] = (at, f["value"].to_numpy(dtype=np.float64))
    index = list(rows)
    out = pd.DataFrame({"replicate": pd.Series([r for r, _ in index], dtype=str),
                        "unit": pd.Series([u for _, u in index], dtype=str)})
    data = {}
    for k, (at, values) in cols.items():
        stored = _column(values)
        col = np.full(len(index), np.nan, dtype=stored.dtype)
        col[at] = stored
        mask = np.ones(len(index), dtype=bool)
        mask[at] = False
        data[k] = pd.arrays.FloatingArray(col, mask)
    return pd.concat([out, pd.DataFrame(data)], axis=1)


def _parquet(frame: pd.DataFrame) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata(None)          # no pandas metadata: one key each
    values = [c for c in frame.columns if c not in _INDEX]
    few = [c for c in values if 4 * frame[c].nunique() <= frame[c].count()]
    rest = [c for c in values if c not in few]
    out = io.BytesIO()
    pq.write_table(table, out, compression="zstd", compression_level=_LEVEL,
                   write_statistics=False, store_schema=False,
                   use_dictionary=[*_INDEX, *few], use_byte_stream_split=rest or False)
    return out.getvalue()


def _parts(wide: pd.DataFrame, limit: int) -> list[bytes]:
    """``wide`` as Parquet files of at most ``limit`` bytes: whole, else its keys split in
    two halves (each with its own rows), recursively."""
    data = _parquet(wide)
    keys = [c for c in wide.columns if c not in _INDEX]
    if len(data) <= limit or len(keys) < 2:
        return [data]
    out = []
    for half in (keys[:len(keys) // 2], keys[len(keys) // 2:]):
        rows = wide[half].notna().any(axis=1).to_numpy()
        out += _parts(wide.loc[rows, [*_INDEX, *half]].reset_index(drop=True), limit)
    return out


def sample_files(path: Path | str) -> list[Path]:
    """The samples files of a record whose first part is ``path``, in order."""
    path = Path(path)
    parts = [path] if path.exists() else []
    n = 1
    while (more := path.with_name(f"{path.stem}-{n}{path.suffix}")).exists():
        parts.append(more)
        n += 1
    return parts


def write_samples(path: Path | str, samples: Mapping[str, pd.DataFrame], keys, *,
                  limit: int = MAX_BYTES) -> list[Path]:
    """Write the samples of ``keys`` (those measured) at ``path`` in the compact form, in
    parts of at most ``limit`` bytes (module docstring); each file is written atomically, and
    parts an earlier, larger record left are removed. Returns the files."""
    from recaudit._files import atomic_write

    path = Path(path)
    blobs = _parts(_wide(samples, keys), limit)
    files = [path] + [path.with_name(f"{path.stem}-{n}{path.suffix}")
                      for n in range(1, len(blobs))]
    for blob, file in zip(blobs, files, strict=True):
        def write(tmp: str, blob: bytes = blob) -> None:
            Path(tmp).write_bytes(blob)

        atomic_write(file, write)
    for stale in sample_files(path)[len(files):]:
        stale.unlink()
    return files


def _read_one(path: Path) -> dict[str, pd.DataFrame]:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    if "key" in table.column_names:                      # the long layout
        long = table.to_pandas().astype({"replicate": str, "unit": str, "value": np.float64})
        return {str(k): g[["replicate", "unit", "value"]].reset_index(drop=True)
                for k, g in long.groupby("key", sort=False, observed=True)}
    rep = np.asarray(table.column("replicate").to_pylist(), dtype=object).astype(str)
    unit = np.asarray(table.column("unit").to_pylist(), dtype=object).astype(str)
    out = {}
    for k in table.column_names:
        if k in _INDEX:
            continue
        col = table.column(k)
        present = pc.is_valid(col).to_numpy(zero_copy_only=False)
        values = col.to_numpy(zero_copy_only=False).astype(np.float64)
        out[k] = pd.DataFrame({"replicate": pd.Series(rep[present], dtype=object),
                               "unit": pd.Series(unit[present], dtype=object),
                               "value": values[present]})
    return out


def read_samples(path: Path | str) -> dict[str, pd.DataFrame]:
    """key -> frame ``replicate, unit, value`` (float64) of a record's samples, ``path`` its
    first part: compact (in one part or several) or in the long layout of earlier
    records. ``replicate`` and ``unit`` of the compact layout are numpy arrays of ``str``
    (object columns, not pandas' Arrow strings): the claims read them as arrays a thousand
    times per listing, and an Arrow column is copied to numpy at each read."""
    out: dict[str, pd.DataFrame] = {}
    for file in sample_files(path):
        out.update(_read_one(file))
    return out
