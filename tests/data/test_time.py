"""Times as the data gave them (issue 47, item 8): which logs hold dates, and how a date and
a duration are written."""

from __future__ import annotations

import numpy as np
import pandas as pd

from recaudit.data import Interactions, date_only, duration_text, epoch_seconds, time_text


def test_a_log_read_from_iso_dates_holds_epoch_seconds():
    frame = pd.DataFrame({"user": ["a", "a", "b"], "item": ["x", "y", "x"],
                          "timestamp": ["2022-06-16T15:34:31Z", "2022-06-17", "2023-01-02"]})
    log = Interactions.from_df(frame)
    assert epoch_seconds(log.timestamp) and not date_only(log.timestamp)
    assert sorted(time_text(t) for t in log.timestamp) == [
        "2022-06-16T15:34:31Z", "2022-06-17T00:00:00Z", "2023-01-02T00:00:00Z"]
    days = Interactions.from_df(frame.assign(timestamp=["2022-06-16", "2022-06-17",
                                                        "2023-01-02"]))
    assert date_only(days.timestamp)
    assert time_text(days.timestamp[0], dates=True) == "2022-06-16"


def test_counters_and_milliseconds_are_not_dates():
    assert not epoch_seconds(np.arange(0, 3 * 10**7, 1000))      # a step counter
    assert not epoch_seconds(np.array([1.6e12, 1.7e12]))          # milliseconds
    assert not epoch_seconds(np.array([], dtype=np.int64))
    assert epoch_seconds(np.array([1.6e9, 1.7e9]))                 # float seconds
    assert not epoch_seconds(np.array([5e7, 1.6e9]))               # one value before 1973


def test_times_and_durations_in_words():
    assert time_text(1655393671) == "2022-06-16T15:34:31Z"
    assert time_text(1655393671.25) == "2022-06-16T15:34:31.250Z"
    assert [duration_text(s) for s in (0, 41, 750, 3.2 * 3600, 20.4 * 86400, 800 * 86400,
                                       float("nan"))] == \
        ["0 s", "41 s", "12.5 min", "3.2 h", "20.4 d", "2.19 y", "–"]
    assert duration_text(400 * 86400) == "400 d"  # a year and a bit: still days
