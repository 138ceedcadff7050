"""validate_frame: canonical output and one clear DataError per kind of bad input."""

from __future__ import annotations

from datetime import datetime, UTC

import numpy as np
import pandas as pd
import pytest

from recaudit.data import Interactions, validate_frame
from recaudit.errors import DataError


def frame(**cols):
    return pd.DataFrame(cols)


def test_canonical_columns_and_row_order_preserved():
    df = frame(u=["b", "a", "b"], i=[3, 1, 2], t=[30, 10, 20], r=[1.0, 2.5, 3.0])
    out = validate_frame(df, {"user": "u", "item": "i", "timestamp": "t", "rating": "r"})
    assert list(out.columns) == ["user", "item", "timestamp", "rating"]
    assert out["user"].tolist() == ["b", "a", "b"]  # original order, not sorted
    assert out["timestamp"].tolist() == [30, 10, 20]
    assert out["timestamp"].dtype == np.int64
    assert out["rating"].dtype == np.float32


def test_timestamp_synthesised_from_row_order_when_absent():
    out = validate_frame(frame(user=[5, 6, 5], item=[1, 1, 2]))
    assert out["timestamp"].tolist() == [0, 1, 2]
    assert out["timestamp"].dtype == np.int64
    assert "rating" not in out


def test_misnamed_required_column_suggests_closest_name():
    with pytest.raises(DataError) as e:
        validate_frame(frame(usr=[1], item=[2], timestamp=[3]), source="f.csv")
    assert e.value.column == "user"
    assert "no column named 'user' ('usr' looks like it)" in str(e.value)
    assert "columns={'user': 'usr'}" in e.value.hint


def test_case_only_difference_is_suggested():
    with pytest.raises(DataError, match="no column named 'user' \\('User' looks like it\\)"):
        validate_frame(frame(User=[1], item=[2]))


def test_explicit_mapping_to_missing_column_is_an_error():
    with pytest.raises(DataError) as e:
        validate_frame(frame(user=[1], item=[2], tstmp=[3]), {"timestamp": "tstamp"})
    assert e.value.column == "tstamp"
    assert "did you mean 'tstmp'" in str(e.value)


def test_probably_misnamed_optional_timestamp_is_not_silently_ignored():
    with pytest.raises(DataError, match="'time' looks like the timestamp but is not named 'timestamp'"):
        validate_frame(frame(user=[1], item=[2], time=[3]))


def test_unknown_role_and_bad_policy_are_value_errors():
    with pytest.raises(ValueError, match="unknown role 'usr'.*did you mean 'user'"):
        validate_frame(frame(user=[1], item=[2]), {"usr": "user"})
    with pytest.raises(ValueError, match="duplicates must be one of"):
        validate_frame(frame(user=[1], item=[2]), duplicates="ignore")
    with pytest.raises(TypeError):
        validate_frame([[1, 2]])


def test_empty_frame():
    with pytest.raises(DataError, match="empty"):
        validate_frame(pd.DataFrame({"user": [], "item": []}), source="x.csv")


def test_nan_timestamp_names_file_line():
    df = frame(user=[1, 2, 3, 4], item=[1, 2, 3, 4], timestamp=[1.0, 2.0, 3.0, np.nan])
    with pytest.raises(DataError) as e:
        validate_frame(df, source="x.csv", first_line=2)
    assert (e.value.source, e.value.line, e.value.column) == ("x.csv", 5, "timestamp")
    assert "x.csv, line 5" in str(e.value)


def test_dataframe_errors_name_the_row_position():
    df = frame(user=[1, 2, 3], item=[1, 2, 3], timestamp=[1.0, np.nan, 3.0])
    with pytest.raises(DataError) as e:
        validate_frame(df)
    assert e.value.line is None
    assert "row 1" in str(e.value)


def test_non_numeric_timestamp_reports_first_bad_line():
    df = frame(user=[1, 2, 3], item=[1, 2, 3], timestamp=["10", "11", "noon"])
    with pytest.raises(DataError) as e:
        validate_frame(df, source="x.csv", first_line=2)
    assert e.value.line == 4
    assert "'noon'" in str(e.value)


def test_iso_datetimes_become_utc_epoch_seconds():
    df = frame(user=[1, 1, 1], item=[1, 2, 3],
               timestamp=["1970-01-01T00:00:10Z", "2012-04-03T18:00:09+01:00",
                          "2012-04-03 18:00:09"])
    out = validate_frame(df)
    expected = [10, int(datetime(2012, 4, 3, 17, 0, 9, tzinfo=UTC).timestamp()),
                int(datetime(2012, 4, 3, 18, 0, 9, tzinfo=UTC).timestamp())]
    assert out["timestamp"].tolist() == expected
    assert out["timestamp"].dtype == np.int64


def test_fractional_datetimes_give_float_seconds():
    out = validate_frame(frame(user=[1, 1], item=[1, 2],
                               timestamp=["1970-01-01T00:00:01.5Z", "1970-01-01T00:00:03Z"]))
    assert out["timestamp"].dtype == np.float64
    assert out["timestamp"].tolist() == [1.5, 3.0]


def test_datetime64_column():
    ts = pd.to_datetime(["2001-09-09 01:46:40", "2001-09-09 01:46:41"]).tz_localize("UTC")
    out = validate_frame(frame(user=[1, 2], item=[1, 2], timestamp=ts))
    assert out["timestamp"].tolist() == [1_000_000_000, 1_000_000_001]


def test_mixed_numbers_and_datetimes_is_an_error_at_the_odd_line():
    df = frame(user=[1, 2, 3], item=[1, 2, 3], timestamp=["5", "6", "2012-01-01"])
    with pytest.raises(DataError) as e:
        validate_frame(df, first_line=1)
    assert e.value.line == 3


def test_missing_ids():
    with pytest.raises(DataError, match="missing item id") as e:
        validate_frame(frame(user=[1, 2], item=[1.0, np.nan]), first_line=2)
    assert e.value.line == 3


def test_required_rating_missing_negative_nan():
    with pytest.raises(DataError, match="no column named 'rating'"):
        validate_frame(frame(user=[1], item=[2]), require_rating=True)
    with pytest.raises(DataError, match="negative") as e:
        validate_frame(frame(user=[1, 2], item=[1, 2], rating=[1.0, -0.5]), require_rating=True,
                       first_line=2)
    assert e.value.line == 3 and e.value.column == "rating"
    with pytest.raises(DataError, match="NaN"):
        validate_frame(frame(user=[1, 2], item=[1, 2], rating=[np.nan, 1.0]))


def test_negative_ratings_allowed_when_not_required():
    out = validate_frame(frame(user=[1, 2], item=[1, 2], rating=[-10.0, 9.5]))
    assert out["rating"].tolist() == [-10.0, 9.5]


def test_single_column_frame_hints_at_the_delimiter():
    with pytest.raises(DataError) as e:
        validate_frame(pd.DataFrame({"user,item,timestamp": ["1,2,3"]}))
    assert "looks like the delimiter is ',': --sep ','" in e.value.hint


DUP = dict(user=[1, 2, 1, 1], item=[7, 7, 7, 7], timestamp=[5, 5, 5, 6], rating=[1.0, 2, 3, 4])


def test_duplicates_error_names_first_duplicate_line_and_first_occurrence():
    with pytest.raises(DataError) as e:
        validate_frame(frame(**DUP), duplicates="error", source="d.csv", first_line=2)
    assert e.value.line == 4
    assert "first seen at line 2" in str(e.value)


def test_duplicates_drop_keeps_first_occurrence_and_keep_keeps_all():
    dropped = validate_frame(frame(**DUP), duplicates="drop")
    assert dropped["rating"].tolist() == [1.0, 2.0, 4.0]
    assert dropped.index.tolist() == [0, 1, 2]
    assert len(validate_frame(frame(**DUP), duplicates="keep")) == 4


def test_from_df_uses_validation():
    with pytest.raises(DataError, match="duplicate"):
        Interactions.from_df(frame(**DUP), duplicates="error")
    log = Interactions.from_df(frame(**DUP), duplicates="drop")
    assert len(log) == 3


def test_nullable_and_infinite_timestamps():
    ok = validate_frame(frame(user=[1, 2], item=[1, 2], timestamp=pd.array([5, 6], dtype="Int64")))
    assert ok["timestamp"].dtype == np.int64 and ok["timestamp"].tolist() == [5, 6]
    with pytest.raises(DataError, match="missing") as e:
        validate_frame(frame(user=[1, 2], item=[1, 2],
                             timestamp=pd.array([5, None], dtype="Int64")), first_line=1)
    assert e.value.line == 2
    with pytest.raises(DataError, match="not finite"):
        validate_frame(frame(user=[1, 2], item=[1, 2], timestamp=[1.0, np.inf]))
