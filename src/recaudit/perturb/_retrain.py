"""A retrain as a perturbation: the training log without its last window.

Every deployed recommender is retrained on a log that has grown. The model that serves today
was trained on yesterday's log; the retrain trains on all of it. ``remove_last(train, window)``
gives the older log, so an audit compares the *stale* model (trained without the window) with
the *fresh* one (trained on the whole log), both asked the same test queries with today's
contexts, as a stale model serves today's users (Lavoura et al. 2025 score models across time
buckets the same way, without seeds or intervals).

The window (:func:`parse_window`):

- a duration ``D`` in the data's own clock, seconds: ``12h``, ``1d``, ``7d``, ``30d``, ``90min``,
  ``45s``, ``2w``, ``1.5d`` or ISO 8601 ``P7D``, ``PT12H``, ``P1DT12H``, ``P2W`` (no years or
  months: their length varies). With ``T`` the training log's latest timestamp, the removed rows
  are those with ``t > T - D``: the half-open window ``(T - D, T]``, so an interaction exactly
  ``D`` before the latest one stays. ISO dates and ``datetime64`` columns are read as seconds
  since the epoch (:mod:`recaudit.data`), and a log of relative seconds (the synthetic
  generator's) is read as seconds too; a log whose clock counts another unit says how many
  seconds one of its units is (``time_unit``: 60 for minutes, 86400 for days), and ``D`` is
  ``seconds / time_unit`` of its units;
- a share of rows ``p%`` (``5%``, ``0.5%``) for a log whose times are only an order: the last
  ``ceil(p n / 100)`` rows of the log's ``(timestamp, row)`` order.

The log is kept in that order, so the window is always its tail: rows ``cut .. n-1``. A log
whose times are a row order (integers, all distinct, spanning fewer than ``2 n`` values: what a
file without a time column gives) has no durations: :func:`remove_last` refuses a duration on
it and names the ``%`` form. A window that would remove every row is an error too; none
removes nothing (``(T - D, T]`` holds the latest row, and ``ceil(p n / 100) >= 1``).

The :class:`RetrainRecord` is compact (the cut row, never the list of removed rows) and names
the users active in the window (``users``: they have an interaction in it); the audit's window
slices (:func:`recaudit.audit.slices` ``by="window"``) read it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recaudit.data import Interactions, duration_text, epoch_seconds, time_text
from recaudit.errors import ConfigError, DataError

__all__ = ["Window", "parse_window", "remove_last", "RetrainRecord", "time_order_only",
           "WINDOW_FORMS"]

#: The accepted forms of a window, in words (error messages and the catalogue).
WINDOW_FORMS = ("a duration such as 12h, 1d, 7d, 30d, 90min, 45s, 2w or 1.5d, ISO 8601 such "
                "as P7D, PT12H or P1DT12H, or a share of rows such as 5%")
_UNITS = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_PLAIN = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>s|min|h|d|w)$")
_SHARE = re.compile(r"^(?P<n>\d+(?:\.\d+)?)%$")
_ISO = re.compile(r"^p(?:(?P<w>\d+)w)?(?:(?P<d>\d+)d)?"
                  r"(?:t(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?)?$")


@dataclass(frozen=True)
class Window:
    """A retrain's window: ``seconds`` of the data's clock, or ``percent`` of the rows (one
    of the two). ``name`` is its canonical text: a duration in the largest of ``d``, ``h``,
    ``min``, ``s`` it fills exactly (``P1W`` is ``7d``, ``1.5d`` is ``36h``), a share as
    ``5%``."""

    seconds: float | None = None
    percent: float | None = None

    @property
    def name(self) -> str:
        if self.percent is not None:
            return f"{_number(self.percent)}%"
        s = float(self.seconds or 0.0)
        for unit in ("d", "h", "min"):
            size = _UNITS[unit]
            if s >= size and (s / size).is_integer():
                return f"{int(s // size)}{unit}"
        return f"{_number(s)}s"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def parse_window(text: str, where: str = "") -> Window:
    """The :class:`Window` ``text`` stands for (module docstring), or a
    :class:`~recaudit.errors.ConfigError` that names the value and the accepted forms
    (``where``: the whole perturbation name, for the message)."""
    raw = str(text).strip().lower()
    whole = f" in {where!r}" if where else ""
    if m := _SHARE.match(raw):
        p = float(m["n"])
        if not 0.0 < p < 100.0:
            raise ConfigError(f"window {text!r}{whole} removes {_number(p)}% of the rows; a "
                              "share is above 0% and below 100%")
        return Window(percent=p)
    seconds: float | None = None
    if m := _PLAIN.match(raw):
        seconds = float(m["n"]) * _UNITS[m["unit"]]
    elif raw.startswith("p") and (m := _ISO.match(raw)) and any(m.groupdict().values()) \
            and not raw.endswith("t"):
        parts = {k: float(v) for k, v in m.groupdict().items() if v}
        seconds = (parts.get("w", 0) * _UNITS["w"] + parts.get("d", 0) * _UNITS["d"]
                   + parts.get("h", 0) * 3600 + parts.get("m", 0) * 60 + parts.get("s", 0))
    if seconds is None:
        hint = ""
        if re.fullmatch(r"\d+(?:\.\d+)?", raw):
            hint = f" A bare number has no unit: write {raw}d, {raw}h or {raw}s."
        elif re.fullmatch(r"\d+(?:\.\d+)?m", raw):
            hint = f" 'm' is ambiguous: write {raw[:-1]}min for minutes (months vary in length)."
        elif raw.startswith("p") and re.search(r"\d[ym]", raw.split("t")[0]):
            hint = " ISO years and months vary in length: give days (P30D)."
        raise ConfigError(f"malformed retrain window {text!r}{whole}: expected {WINDOW_FORMS}."
                          + hint)
    if seconds <= 0:
        raise ConfigError(f"retrain window {text!r}{whole} is empty; a duration is above 0")
    return Window(seconds=seconds)


def time_order_only(timestamps: np.ndarray) -> bool:
    """Whether ``timestamps`` are a row order rather than times: integers, all distinct,
    spanning fewer than twice as many values as there are rows (what a log read without a
    time column has, ``0 .. n-1``, and the training part of any split of it)."""
    t = np.asarray(timestamps)
    n = len(t)
    if t.dtype.kind not in "iu" or n < 2 or epoch_seconds(t):
        return False
    span = int(t.max()) - int(t.min()) + 1
    return span < 2 * n and len(np.unique(t)) == n


@dataclass(frozen=True)
class RetrainRecord:
    """What :func:`remove_last` removed: the rows ``cut .. n_rows-1`` of the training log.

    window: the canonical window (``"7d"``, ``"5%"``); seconds / percent: its size (one is
    ``None``). latest: the log's latest timestamp ``T``. since: ``T - seconds`` (rows with a
    time above it were removed; ``None`` for a share). first_removed: the earliest removed
    timestamp. cut: the first removed row. removed: rows removed (``n_rows - cut``).
    users: the user codes active in the window (an interaction in it), sorted. emptied: users
    with every training interaction in the window (the stale model never saw them).
    n_rows, source: length and fingerprint of the original log (:meth:`apply` checks them).
    warm: the perturbation is the ``+warm`` variant (:mod:`recaudit.perturb._spec`).
    time_unit: seconds per unit of the log's timestamps (1: seconds).
    """

    window: str
    cut: int
    n_rows: int
    latest: float
    first_removed: float
    seconds: float | None = None
    percent: float | None = None
    since: float | None = None
    users: tuple[int, ...] = ()
    emptied: int = 0
    source: str = ""
    warm: bool = False
    time_unit: float = 1.0
    kind: str = field(default="retrain")

    @property
    def removed(self) -> int:
        return self.n_rows - self.cut

    @property
    def changes_data(self) -> bool:
        return self.removed > 0

    def to_dict(self) -> dict[str, Any]:
        """JSON data (:meth:`from_dict` reads it back); ``selector`` and ``removed`` are
        written for readers of the store."""
        return {"kind": self.kind, "selector": "last-window", "window": self.window,
                "seconds": self.seconds, "percent": self.percent, "latest": _plain(self.latest),
                "since": None if self.since is None else _plain(self.since),
                "first_removed": _plain(self.first_removed), "cut": self.cut,
                "removed": self.removed, "n_rows": self.n_rows, "users": list(self.users),
                "emptied": self.emptied, "source": self.source, "warm": self.warm,
                "time_unit": self.time_unit}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetrainRecord:
        d = {k: v for k, v in data.items() if k not in ("selector", "removed", "in_your_ids")}
        d["users"] = tuple(int(u) for u in d.get("users", ()))
        return cls(**d)

    def apply(self, original: Interactions) -> Interactions:
        """Redo the removal on ``original`` (the log it was made from, else a
        :class:`~recaudit.errors.DataError`)."""
        if self.source and (len(original) != self.n_rows
                            or original.fingerprint() != self.source):
            raise DataError(f"this record was made from a different log ({self.n_rows} rows, "
                            f"fingerprint {self.source[:12]}...); got {len(original)} rows",
                            source=original.name,
                            hint="apply a record to the exact training log it was made from")
        return original.take(np.arange(self.cut))


def _plain(x: Any) -> int | float:
    x = np.asarray(x).item()
    return int(x) if isinstance(x, int) else float(x)


def _when(t: float, epoch: bool, dates: bool) -> str:
    return time_text(t, dates) if epoch else _number(float(t))


def remove_last(train: Interactions, window: Window | str, *, warm: bool = False,
                time_unit: float = 1.0) -> tuple[Interactions, RetrainRecord]:
    """``train`` without its last ``window`` (module docstring) and the record of it;
    ``time_unit``: seconds per unit of the log's timestamps.

    Raises :class:`~recaudit.errors.DataError` (naming the log's span and what to change) for
    a duration on a log whose times are only an order, and for a window that removes every
    row."""
    w = parse_window(window) if isinstance(window, str) else window
    name = f"remove-last-{w.name}"
    if not time_unit > 0:
        raise ConfigError(f"{name}: time_unit={time_unit!r} must be the seconds one unit of the "
                          "log's timestamps lasts, above 0 (60 for minutes, 86400 for days)")
    n = len(train)
    if n == 0:
        raise DataError(f"{name}: the training log is empty", source=train.name)
    ts = train.timestamp
    latest, earliest = ts[-1], ts[0]
    epoch = epoch_seconds(ts) and time_unit == 1.0
    dates = epoch and bool(np.all(np.asarray(ts, dtype=np.float64) % 86400 == 0))
    span = (f"the training log runs from {_when(earliest, epoch, dates)} to "
            f"{_when(latest, epoch, dates)}"
            + (f" ({duration_text(float(latest) - float(earliest))})" if epoch else ""))
    since = None
    if w.seconds is not None:
        if time_order_only(ts):
            raise DataError(f"{name}: the training log has no times, only an order (its "
                            f"timestamps are the distinct integers {int(earliest)} .. "
                            f"{int(latest)}, as a file without a time column gives), so a "
                            "duration has no meaning on it", source=train.name,
                            hint="remove a share of the latest rows instead: remove-last-5%")
        since = float(latest) - w.seconds / time_unit
        # rows with t > since: the log is sorted by time, so they are its tail
        cut = int(np.searchsorted(ts, since, side="right"))
    else:
        cut = n - math.ceil(float(w.percent or 0.0) * n / 100.0)
    if cut <= 0:
        unit = "" if w.seconds is None or time_unit != 1.0 else \
            "; if its times count minutes or days, not seconds, set time_unit (60, 86400)"
        raise DataError(f"{name} removes every row of the training log: {span}",
                        source=train.name,
                        hint="give a shorter window (the model trained without it would have "
                             f"no data){unit}")
    active = np.unique(train.user[cut:])
    before = np.zeros(train.n_users, dtype=bool)
    before[train.user[:cut]] = True
    record = RetrainRecord(window=w.name, cut=cut, n_rows=n, latest=_plain(latest),
                           first_removed=_plain(ts[cut]), seconds=w.seconds,
                           percent=w.percent, since=since,
                           users=tuple(active.tolist()),
                           emptied=int(np.sum(~before[active])), source=train.fingerprint(),
                           warm=warm, time_unit=float(time_unit))
    return train.take(np.arange(cut)), record
