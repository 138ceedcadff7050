"""Times as the data gave them: dates and durations instead of raw seconds.

An :class:`~recaudit.data.Interactions` log keeps its times as numbers: ISO 8601 strings and
``datetime64`` columns become seconds since the Unix epoch, UTC (:mod:`._frames`), and numbers
stay as they were written. Whether the numbers *are* such seconds is not recorded, so it is
read from their range (:func:`epoch_seconds`): every value between 1973-03-03 (``1e8`` s) and
2100-01-01 — what ISO dates, ``datetime64`` columns and Unix-time files give, and no step
counter or day index of a few million. Such times are written as ISO 8601 dates
(:func:`time_text`: ``2022-06-16`` where every time of the log is a midnight, else
``2022-06-16T15:34:31Z``) and their differences as durations (:func:`duration_text`:
``41 s``, ``12.5 min``, ``3.2 h``, ``20.4 d``, ``1.5 y``); other times stay numbers.
"""

from __future__ import annotations

import datetime as _dt

import numpy as np

__all__ = ["epoch_seconds", "date_only", "time_text", "duration_text"]

#: The range of times read as seconds since the epoch: 1973-03-03 up to 2100-01-01.
EPOCH_RANGE = (1e8, 4102444800.0)
_UNITS = (("y", 365.25 * 86400), ("d", 86400.0), ("h", 3600.0), ("min", 60.0))


def epoch_seconds(timestamps: np.ndarray) -> bool:
    """Whether ``timestamps`` read as seconds since the Unix epoch (module docstring)."""
    t = np.asarray(timestamps)
    if t.dtype.kind not in "iuf" or not len(t):
        return False
    low, high = float(np.min(t)), float(np.max(t))
    return EPOCH_RANGE[0] <= low and high < EPOCH_RANGE[1]


def date_only(timestamps: np.ndarray) -> bool:
    """Whether every time is a midnight UTC (a log of dates: written without the hour)."""
    t = np.asarray(timestamps, dtype=np.float64)
    return bool(len(t)) and bool(np.all(t % 86400 == 0))


def time_text(seconds: float, dates: bool = False) -> str:
    """An epoch time in ISO 8601, UTC: ``2022-06-16T15:34:31Z``, or ``2022-06-16`` when
    ``dates`` (fractions of a second kept to the millisecond)."""
    when = _dt.datetime.fromtimestamp(float(seconds), _dt.UTC)
    if dates:
        return when.strftime("%Y-%m-%d")
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += f".{when.microsecond // 1000:03d}"
    return text + "Z"


def duration_text(seconds: float) -> str:
    """A duration in the largest unit it fills (``y``: 365.25 days, ``d``, ``h``, ``min``,
    else ``s``), three significant digits: ``20.4 d``."""
    s = float(seconds)
    if s != s:
        return "–"
    for unit, size in _UNITS:
        if abs(s) >= (2 * size if unit == "y" else size):
            return f"{s / size:.3g} {unit}"
    return f"{s:.3g} s"
