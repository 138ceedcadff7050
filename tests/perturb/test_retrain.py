"""A retrain as a perturbation (``remove-last-<window>``), worked by hand: which rows a window
removes at its boundaries, on epoch seconds, dates and a row order; its record; its errors."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from recaudit.data import Interactions
from recaudit.errors import ConfigError, DataError
from recaudit.perturb import (RetrainRecord, RetrainSpec, parse, parse_window, remove_last,
                              time_order_only)
from recaudit.seeds import make_rng

DAY = 86400
T = 1_700_000_000  # the latest time of LOG (2023-11-14T22:13:20Z)
# (user, item, seconds before T): a row exactly 1 d before T, one a second inside the day
ROWS = [(0, 0, 40 * DAY), (1, 1, 31 * DAY), (0, 2, 30 * DAY), (2, 3, 8 * DAY),
        (1, 4, 7 * DAY), (0, 5, DAY), (2, 6, DAY - 1), (3, 7, 3600), (1, 8, 0)]


def _log(times=None) -> Interactions:
    user, item, ago = (list(c) for c in zip(*ROWS, strict=True))
    ts = [T - a for a in ago] if times is None else times
    return Interactions.from_codes(user, item, ts, n_users=5, n_items=10)


LOG = _log()


def _removed(log: Interactions, out: Interactions) -> list[int]:
    """The items whose rows were removed (every item is in one row of LOG)."""
    return sorted(set(log.item.tolist()) - set(out.item.tolist()))


@pytest.mark.parametrize("window,items", [
    # the window is (T - D, T]: a row exactly D before T stays
    ("1d", [6, 7, 8]), ("P1D", [6, 7, 8]), ("24h", [6, 7, 8]), ("1440min", [6, 7, 8]),
    ("86400s", [6, 7, 8]), ("86399s", [7, 8]), ("86401s", [5, 6, 7, 8]),
    ("7d", [5, 6, 7, 8]), ("1w", [5, 6, 7, 8]), ("P1W", [5, 6, 7, 8]),
    ("30d", [3, 4, 5, 6, 7, 8]), ("P30DT1S", [2, 3, 4, 5, 6, 7, 8]),
    ("PT1H", [8]), ("PT1H1S", [7, 8]), ("1.5h", [7, 8]), ("12h", [7, 8]),
])
def test_a_duration_removes_the_rows_after_latest_minus_it(window, items):
    out, rec = remove_last(LOG, window)
    assert _removed(LOG, out) == items
    assert rec.removed == len(items) and rec.cut == len(LOG) - len(items)
    assert rec.latest == T and rec.since == T - parse_window(window).seconds
    # the independent rule: every kept row is at or before T - D, every removed one after it
    assert (out.timestamp <= rec.since).all()
    assert (LOG.timestamp[rec.cut:] > rec.since).all()
    assert rec.apply(LOG).fingerprint() == out.fingerprint()


def test_the_record_names_the_users_active_in_the_window():
    out, rec = remove_last(LOG, "7d")   # items 5 (user 0), 6 (user 2), 7 (user 3), 8 (user 1)
    assert rec.users == (0, 1, 2, 3)
    assert rec.emptied == 1             # user 3's only interaction is in the window
    assert rec.first_removed == T - DAY and rec.window == "7d" and rec.seconds == 7 * DAY
    out, rec = remove_last(LOG, "1d")
    assert rec.users == (1, 2, 3) and rec.emptied == 1
    assert out.n_users == LOG.n_users and out.n_items == LOG.n_items  # the same code space
    back = RetrainRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back == rec and rec.to_dict()["removed"] == 3


def test_dates_give_what_their_epoch_seconds_give():
    frame = pd.DataFrame({"user": [f"u{u}" for u, _, _ in ROWS],
                          "item": [f"i{i}" for _, i, _ in ROWS],
                          "timestamp": pd.to_datetime([T - a for _, _, a in ROWS], unit="s",
                                                      utc=True)})
    log = Interactions.from_df(frame)
    assert log.timestamp.tolist() == LOG.timestamp.tolist()
    for window in ("1d", "7d", "30d", "12h"):
        out, rec = remove_last(log, window)
        assert sorted(out.item_ids[out.item].tolist()) == \
            sorted(f"i{i}" for i in remove_last(LOG, window)[0].item.tolist())
    iso = frame.assign(timestamp=frame.timestamp.dt.strftime("%Y-%m-%dT%H:%M:%SZ"))
    assert Interactions.from_df(iso).timestamp.tolist() == LOG.timestamp.tolist()


def test_relative_seconds_are_the_data_s_own_clock():
    log = _log([10 * DAY - a for _, _, a in ROWS])   # seconds from an origin of its own
    assert remove_last(log, "7d")[1].removed == 4
    assert remove_last(log, "30d")[1].removed == 6


@pytest.mark.parametrize("percent,removed", [("5%", 1), ("11.2%", 2), ("12%", 2),
                                             ("22.3%", 3), ("50%", 5), ("99%", 9)])
def test_a_share_removes_the_last_ceil_p_n_rows(percent, removed):
    if removed >= len(LOG):
        with pytest.raises(DataError, match="removes every row"):
            remove_last(LOG, percent)
        return
    out, rec = remove_last(LOG, percent)
    assert rec.removed == removed == int(np.ceil(float(percent[:-1]) * len(LOG) / 100))
    assert out.item.tolist() == LOG.item[:len(LOG) - removed].tolist()
    assert rec.seconds is None and rec.since is None and rec.percent == float(percent[:-1])


def test_a_log_without_times_takes_a_share_and_refuses_a_duration():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        log = Interactions.from_df(pd.DataFrame({"user": list("abcabcab"),
                                                 "item": list("xyzzyxxy")}))
    assert time_order_only(log.timestamp) and not time_order_only(LOG.timestamp)
    train = log.take(np.array([0, 1, 2, 4, 5, 7]))   # the training part of a split of it
    assert time_order_only(train.timestamp)
    out, rec = remove_last(train, "34%")
    assert rec.removed == 3 and out.timestamp.tolist() == [0, 1, 2]
    with pytest.raises(DataError, match=r"(?s)no times, only an order.*remove-last-5%"):
        remove_last(train, "7d")


def test_windows_that_remove_everything_are_errors():
    with pytest.raises(DataError, match=r"remove-last-41d removes every row.*2023-10-05"):
        remove_last(LOG, "41d")
    assert remove_last(LOG, "40d")[1].removed == 8      # the first row, exactly 40 d before
    one = Interactions.from_codes([0, 0], [0, 1], [T, T], n_items=2)
    with pytest.raises(DataError, match="removes every row"):
        remove_last(one, "1s")                          # both rows at the latest time


def test_no_window_removes_nothing():
    # (T - D, T] holds the latest row for any D > 0, and ceil(p n / 100) >= 1 for any p > 0
    assert remove_last(LOG, "0.01%")[1].removed == 1
    assert remove_last(LOG, "1s")[1].removed == 1


@pytest.mark.parametrize("name,match", [
    ("remove-last-7", r"'7'.*A bare number has no unit: write 7d"),
    ("remove-last-7m", r"'m' is ambiguous: write 7min"),
    ("remove-last-P1M", r"ISO years and months vary in length"),
    ("remove-last-P1Y", r"ISO years and months vary in length"),
    ("remove-last-seven-days", r"malformed retrain window 'seven-days'.*P7D.*5%"),
    ("remove-last-0d", r"empty"),
    ("remove-last-0%", r"above 0%"),
    ("remove-last-100%", r"below 100%"),
    ("remove-last-PT", r"malformed"),
    ("remove-last-7d+inputs", r"only suffix is '\+warm'"),
    ("random-delete+warm", r"only remove-last-<window> has it"),
])
def test_malformed_windows_name_the_value_and_the_accepted_forms(name, match):
    with pytest.raises(ConfigError, match=match):
        parse(name)


def test_the_spec_names_needs_and_draws():
    assert parse("remove-last-P7D").name == "remove-last-7d"
    assert parse("remove-last-1.5d").name == "remove-last-36h"
    assert parse("remove-last-2w").name == "remove-last-14d"
    spec = parse("remove-last-7d+warm")
    assert isinstance(spec, RetrainSpec) and spec.warm and spec.name == "remove-last-7d+warm"
    assert spec.needs.warm and not spec.needs.rng and not spec.needs.reseed
    assert not parse("remove-last-7d").needs.warm
    assert parse(spec.to_dict()) == spec
    assert parse({"name": "remove-last-7d+warm", "warm_epochs": 3}).warm_epochs == 3
    with pytest.raises(ConfigError, match="warm_epochs"):
        parse({"name": "remove-last-7d", "warm_epochs": 3})
    assert spec.describe().family == "remove-last+warm"
    # the same rows on every draw: the removal draws nothing
    a = spec.apply(LOG, make_rng(0))[1]
    b = spec.apply(LOG, make_rng(1))[1]
    assert a == b and a.warm


def test_a_clock_in_minutes_takes_a_time_unit():
    minutes = _log([(T - a) // 60 for _, _, a in ROWS])   # the same log, times in minutes
    out, rec = remove_last(minutes, "7d", time_unit=60)
    assert _removed(minutes, out) == _removed(LOG, remove_last(LOG, "7d")[0])
    assert rec.time_unit == 60 and rec.since == minutes.timestamp[-1] - 7 * 24 * 60
    with pytest.raises(DataError, match="(?s)removes every row.*set time_unit"):
        remove_last(_log([a // 3600 for _, _, a in ROWS][::-1]), "7d")  # hours read as s?
    spec = parse({"name": "remove-last-7d", "time_unit": 60})
    assert spec.apply(minutes, make_rng(0))[1] == rec
    with pytest.raises(ConfigError, match="no time unit"):
        parse({"name": "remove-last-5%", "time_unit": 60})
    with pytest.raises(ConfigError, match="time_unit"):
        parse({"name": "remove-last-7d", "time_unit": 0})
