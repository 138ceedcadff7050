"""Readers and writers: every supported format, line-accurate errors, exact round trips."""

from __future__ import annotations

import csv
import os
from datetime import datetime, UTC
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from recaudit.data import (
    Interactions,
    detect_format,
    read,
    read_csv,
    read_foursquare_tsmc,
    read_jester,
    read_jodie,
    read_movielens,
    read_parquet,
    read_recbole,
    read_tsv_shared,
    write_csv,
    write_parquet,
)
from recaudit.errors import DataError


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_text(text, encoding=encoding)
    return path


def triples(log: Interactions) -> list[tuple]:
    df = log.to_df()
    return list(zip(df["user"].tolist(), df["item"].tolist(), df["timestamp"].tolist()))


# ------------------------------------------------------------------------------- CSV / TSV
@pytest.mark.parametrize("sep", [",", "\t", ";", " "])
def test_read_csv_sniffs_the_delimiter(tmp_path, sep):
    text = sep.join(["user", "item", "timestamp", "rating"]) + "\n"
    text += "\n".join(sep.join(r) for r in [["u1", "i1", "20", "4"], ["u2", "i1", "10", "3.5"]])
    log = read_csv(write(tmp_path / "x.txt", text + "\n"))
    # rows come back in (timestamp, row) order
    assert triples(log) == [("u2", "i1", 10), ("u1", "i1", 20)]
    assert log.rating.tolist() == [3.5, 4.0]


def test_headerless_positional_layouts(tmp_path):
    log = read_csv(write(tmp_path / "a.csv", "1,10,100\n2,20,50\n"))
    assert triples(log) == [(2, 20, 50), (1, 10, 100)]
    assert log.rating is None
    log4 = read_csv(write(tmp_path / "b.tsv", "1\t10\t4.5\t100\n2\t20\t1\t50\n"))
    assert log4.rating.tolist() == [1.0, 4.5]  # MovieLens order user item rating timestamp


def test_headerless_with_names_and_positions(tmp_path):
    p = write(tmp_path / "w.tsv", "0\t7\t3\t0.5\n1\t8\t3\t1.5\n")
    log = read_csv(p, columns=["row_id", "user", "item", "timestamp"])
    assert triples(log) == [(7, 3, 0.5), (8, 3, 1.5)]
    log2 = read_csv(p, header=False, columns={"user": 1, "item": 2, "timestamp": 3})
    assert triples(log2) == triples(log)


def test_header_mapping(tmp_path):
    p = write(tmp_path / "m.csv", "uid,iid,when\nA,X,3\nB,Y,2\n")
    log = read_csv(p, columns={"user": "uid", "item": "iid", "timestamp": "when"})
    assert triples(log) == [("B", "Y", 2), ("A", "X", 3)]


def test_wrong_delimiter_is_explained(tmp_path):
    p = write(tmp_path / "c.csv", "user,item,timestamp\n1,2,3\n")
    with pytest.raises(DataError) as e:
        read_csv(p, sep="\t")
    assert e.value.source == str(p) and e.value.line == 1
    assert "looks like the delimiter is ',': --sep ','" in e.value.hint


def test_empty_file_and_header_only(tmp_path):
    with pytest.raises(DataError, match="file is empty"):
        read_csv(write(tmp_path / "e.csv", ""))
    with pytest.raises(DataError, match="no interactions"):
        read_csv(write(tmp_path / "h.csv", "user,item,timestamp\n"))


def test_error_lines_count_the_header(tmp_path):
    p = write(tmp_path / "bad.csv", "user,item,timestamp\n1,1,1\n2,2,2\n3,3,soon\n")
    with pytest.raises(DataError) as e:
        read_csv(p)
    assert (e.value.source, e.value.line, e.value.column) == (str(p), 4, "timestamp")


def test_blank_line_inside_is_an_error_but_trailing_blank_lines_are_not(tmp_path):
    with pytest.raises(DataError, match="empty line") as e:
        read_csv(write(tmp_path / "b.csv", "user,item\n1,1\n\n2,2\n"))
    assert e.value.line == 3
    assert len(read_csv(write(tmp_path / "t.csv", "user,item\n1,1\n2,2\n\n\n"))) == 2


def test_ragged_row_reports_its_line(tmp_path):
    p = write(tmp_path / "r.csv", "user,item,timestamp\n1,1,1\n2,2,2,9\n")
    with pytest.raises(DataError, match="expected 3 fields, saw 4") as e:
        read_csv(p)
    assert e.value.line == 3


def test_duplicate_error_from_file_names_lines(tmp_path):
    p = write(tmp_path / "d.csv", "user,item,timestamp\n1,1,1\n2,2,2\n1,1,1\n")
    with pytest.raises(DataError) as e:
        read_csv(p, duplicates="error")
    assert e.value.line == 4 and "first seen at line 2" in str(e.value)
    assert len(read_csv(p, duplicates="drop")) == 2


def test_bad_encoding_hint(tmp_path):
    p = tmp_path / "l.csv"
    p.write_bytes("user,item\nJos\u00e9,1\nA,2\n".encode("latin-1"))
    with pytest.raises(DataError, match="encoding='latin-1'"):
        read_csv(p)
    assert read_csv(p, encoding="latin-1").user_ids.tolist() == ["A", "Jos\u00e9"]


# ------------------------------------------------------------------------------- writers
def sample_log() -> Interactions:
    df = pd.DataFrame({"user": ["u3", "u1", "u2", "u1", "u4"], "item": [10, 30, 20, 10, 40],
                       "timestamp": [0.25, 1.0 / 3.0, 7.5, 2.0, 9.0],
                       "rating": [1.0, 0.1, 5.0, 2.5, 3.0]})
    return Interactions.from_df(df, item_attributes={10: {"a", "b"}, 30: ["c"]}, name="sample")


def test_parquet_round_trip_is_exact(tmp_path):
    log = sample_log()
    # drop u4's only row: its id must survive (fixed code space)
    part = log.take(np.flatnonzero(log.user != list(log.user_ids).index("u4")))
    for original in (log, part):
        path = tmp_path / "x.parquet"
        write_parquet(original, path)
        back = read_parquet(path)
        assert back.fingerprint() == original.fingerprint()
        assert back.n_users == original.n_users and back.n_items == original.n_items
        assert dict(back.item_attributes) == dict(original.item_attributes)
        assert back.name == "sample"
    assert read(tmp_path / "x.parquet").fingerprint() == part.fingerprint()


def test_parquet_without_metadata(tmp_path):
    df = pd.DataFrame({"user": [1, 2], "item": [5, 6], "timestamp": [2, 1]})
    df.to_parquet(tmp_path / "p.parquet")
    log = read_parquet(tmp_path / "p.parquet")
    assert triples(log) == [(2, 6, 1), (1, 5, 2)]


def test_csv_round_trip(tmp_path):
    log = sample_log()
    write_csv(log, tmp_path / "x.csv")
    back = read_csv(tmp_path / "x.csv")
    pd.testing.assert_frame_equal(back.to_df(), log.to_df())
    write_csv(log, tmp_path / "x.tsv", sep="\t")
    pd.testing.assert_frame_equal(read_csv(tmp_path / "x.tsv").to_df(), log.to_df())
    assert log.to_csv is not None  # the Interactions method routes to write_csv
    log.to_csv(str(tmp_path / "y.csv"))
    assert (tmp_path / "y.csv").read_text() == (tmp_path / "x.csv").read_text()


def test_failed_write_leaves_nothing_half_written(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    target = tmp_path / "keep.parquet"
    write_parquet(sample_log(), target)
    before = target.read_bytes()

    def broken(table, where, **kw):
        Path(where).write_bytes(b"PAR1 partial")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        write_parquet(sample_log(), target)
    with pytest.raises(OSError):
        write_parquet(sample_log(), tmp_path / "new.parquet")
    assert target.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["keep.parquet"]


# ------------------------------------------------------------------------------- RecBole
def test_read_recbole_with_item_genres(tmp_path):
    write(tmp_path / "toy.inter", "user_id:token\titem_id:token\trating:float\ttimestamp:float\n"
          "196\t242\t3\t881250949\n186\t302\t3\t891717742\n196\t302\t5\t881250950\n")
    write(tmp_path / "toy.item", "item_id:token\tmovie_title:token_seq\trelease_year:token\t"
          "class:token_seq\n242\tKolya \"x y\t1996\tComedy\n302\tL.A. Confidential\t1997\t"
          "Crime Film-Noir Mystery Thriller\n")
    log = read_recbole(tmp_path / "toy.inter")
    assert triples(log) == [(196, 242, 881250949), (196, 302, 881250950), (186, 302, 891717742)]
    assert log.rating.tolist() == [3.0, 5.0, 3.0]
    attrs = {log.item_ids[k]: set(v) for k, v in log.item_attributes.items()}
    assert attrs == {242: {"Comedy"}, 302: {"Crime", "Film-Noir", "Mystery", "Thriller"}}
    assert read_recbole(tmp_path / "toy.inter", path_item=False).item_attributes is None
    assert read(tmp_path / "toy.inter").fingerprint() == log.fingerprint()


def test_recbole_header_without_types(tmp_path):
    with pytest.raises(DataError, match="no ':type'") as e:
        read_recbole(write(tmp_path / "x.inter", "user_id\titem_id\n1\t2\n"))
    assert e.value.line == 1


# ------------------------------------------------------------------------------- JODIE
def test_read_jodie_ignores_features(tmp_path):
    p = write(tmp_path / "wikipedia.csv",
              "user_id,item_id,timestamp,state_label,comma_separated_list_of_features\n"
              "0,0,0.0,0,0.1,-0.2,0.3\n1,1,36.0,0,0.0,0.0,0.0\n0,1,77.5,1,1,2,3\n")
    log = read_jodie(p)
    assert triples(log) == [(0, 0, 0.0), (1, 1, 36.0), (0, 1, 77.5)]
    assert detect_format(p) == "jodie"
    with pytest.raises(DataError, match="not a JODIE header"):
        read_jodie(write(tmp_path / "o.csv", "a,b,c\n1,2,3\n"))


# ------------------------------------------------------------------------------- MovieLens
def test_movielens_100k_u_data_with_genres(tmp_path):
    d = tmp_path / "ml-100k"
    d.mkdir()
    write(d / "u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n")
    write(d / "u.genre", "unknown|0\nAction|1\nComedy|2\n\n")
    write(d / "u.item", "242|Kolya (1996)|24-Jan-1997||http://x|0|0|1\n"
          "302|L.A. Confidential (1997)|01-Jan-1997||http://y|0|1|1\n", encoding="latin-1")
    for path in (d / "u.data", d):
        log = read_movielens(path)
        assert triples(log) == [(196, 242, 881250949), (186, 302, 891717742)]
        attrs = {log.item_ids[k]: set(v) for k, v in log.item_attributes.items()}
        assert attrs == {242: {"Comedy"}, 302: {"Action", "Comedy"}}
    assert detect_format(d / "u.data") == "movielens"


def test_movielens_1m_dat(tmp_path):
    write(tmp_path / "ratings.dat", "1::1193::5::978300760\n1::661::3::978302109\n")
    write(tmp_path / "movies.dat", "1193::One Flew Over the Cuckoo's Nest (1975)::Drama\n"
          "661::James and the Giant Peach (1996)::Animation|Children's|Musical\n",
          encoding="latin-1")
    log = read(tmp_path / "ratings.dat")
    assert triples(log) == [(1, 1193, 978300760), (1, 661, 978302109)]
    attrs = {log.item_ids[k]: set(v) for k, v in log.item_attributes.items()}
    assert attrs == {1193: {"Drama"}, 661: {"Animation", "Children's", "Musical"}}


def test_movielens_ratings_csv_requires_nonnegative_ratings(tmp_path):
    write(tmp_path / "ratings.csv", "userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n"
          "1,1029,-3.0,1260759179\n")
    with pytest.raises(DataError, match="negative") as e:
        read_movielens(tmp_path / "ratings.csv")
    assert e.value.line == 3


def test_movielens_latest_small_from_shared_data(shared_data):
    path = shared_data / "ml-latest-small" / "ratings.csv"
    log = read(path)
    assert (len(log), log.n_users, log.n_items) == (100_004, 671, 9_066)
    with open(shared_data / "ml-latest-small" / "movies.csv", newline="") as fh:
        rows = {int(r["movieId"]): set(r["genres"].split("|")) for r in csv.DictReader(fh)}
    code = {iid: c for c, iid in enumerate(log.item_ids.tolist())}
    for movie in (1, 2, 31):
        assert set(log.item_attributes[code[movie]]) == rows[movie]
    assert log.rating.min() >= 0.5 and log.rating.max() <= 5.0


# ------------------------------------------------------------------------------- shared TSVs
def test_read_tsv_shared_by_column_count(tmp_path):
    four = read_tsv_shared(write(tmp_path / "w.tsv", "0\t5\t1\t0.000\n1\t6\t1\t36.000\n"))
    assert triples(four) == [(5, 1, 0.0), (6, 1, 36.0)]
    three = read_tsv_shared(write(tmp_path / "f.tsv", "94\t1677\t53\n826\t2708\t57\n"))
    assert triples(three) == [(94, 1677, 53), (826, 2708, 57)]
    with pytest.raises(DataError, match="found 5"):
        read_tsv_shared(write(tmp_path / "x.tsv", "1\t2\t3\t4\t5\n"))


def test_shared_wikipedia_and_foursquare(shared_data):
    wiki = read(shared_data / "wikipedia.tsv")
    assert (len(wiki), wiki.n_users, wiki.n_items) == (157_474, 8_227, 1_000)
    fsq = read(shared_data / "foursquare.tsv")
    assert (len(fsq), fsq.n_users, fsq.n_items) == (194_105, 2_321, 5_596)
    assert np.all(np.diff(fsq.timestamp) >= 0)


# ------------------------------------------------------------------------------- Foursquare TSMC
def test_read_foursquare_tsmc(tmp_path):
    p = write(tmp_path / "dataset_TSMC2014_NYC.txt",
              "470\t49bbd6c0f964a520f4531fe3\t4bf58dd8d48988d127951735\tArts & Crafts Store\t"
              "40.71\t-74.00\t-240\tTue Apr 03 18:00:09 +0000 2012\n"
              "979\t4a43c0aef964a520c6a61fe3\t4bf58dd8d48988d1df941735\tBridge\t40.60\t-74.04\t"
              "-240\tTue Apr 03 18:00:25 +0000 2012\n", encoding="latin-1")
    log = read(p)
    t0 = int(datetime(2012, 4, 3, 18, 0, 9, tzinfo=UTC).timestamp())
    assert log.timestamp.tolist() == [t0, t0 + 16]
    attrs = {log.item_ids[k]: set(v) for k, v in log.item_attributes.items()}
    assert attrs["49bbd6c0f964a520f4531fe3"] == {"Arts & Crafts Store"}
    bad = write(tmp_path / "b.txt", "1\tv\tc\tn\t0\t0\t0\tyesterday\n")
    with pytest.raises(DataError, match="cannot parse UTC time") as e:
        read_foursquare_tsmc(bad)
    assert e.value.line == 1


# ------------------------------------------------------------------------------- Jester
def test_read_jester_allows_negative_ratings_and_uses_row_order(tmp_path):
    p = write(tmp_path / "jester_ratings.dat",
              "1\t\t5\t\t0.219\n1\t\t7\t\t-9.281\n2\t\t5\t\t-9.688\n")
    log = read(p)
    assert log.rating.tolist() == pytest.approx([0.219, -9.281, -9.688])
    assert log.timestamp.tolist() == [0, 1, 2]
    assert read_jester(p).fingerprint() == log.fingerprint()


# ------------------------------------------------------------------------------- dispatch
def test_detect_format_and_unknown_format(tmp_path):
    assert detect_format(tmp_path / "x.parquet") == "parquet"
    assert detect_format(tmp_path / "x.inter") == "recbole"
    assert detect_format(tmp_path / "wikipedia.tsv") == "tsv-shared"
    assert detect_format(tmp_path / "other.tsv") == "tsv"
    ml = tmp_path / "ml"
    ml.mkdir()
    assert detect_format(write(ml / "ratings.csv", "userId,movieId,rating,timestamp\n1,2,4,5\n")) == "movielens"
    # a ratings.csv of one's own is a plain CSV, not MovieLens
    assert detect_format(write(tmp_path / "ratings.csv", "user,item,rating\n1,2,4\n")) == "csv"
    p = write(tmp_path / "z.csv", "user,item\n1,2\n")
    with pytest.raises(ValueError, match="unknown format 'xls'"):
        read(p, format="xls")
    with pytest.raises(DataError, match="file not found"):
        read(tmp_path / "missing.csv")


def test_extra_field_is_an_error_not_a_silent_shift(tmp_path):
    write(tmp_path / "s.inter", "user_id:token\titem_id:token\n1\t2\t3\n4\t5\t6\n")
    with pytest.raises(DataError, match="expected 2 fields") as e:
        read_recbole(tmp_path / "s.inter")
    assert e.value.line == 2
    with pytest.raises(DataError, match="expected 4 fields"):
        read_movielens(write(tmp_path / "u.data", "1\t2\t3\n"))


def test_corrupt_parquet(tmp_path):
    p = tmp_path / "broken.parquet"
    p.write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match="cannot read as Parquet"):
        read_parquet(p)


def test_a_time_column_under_a_name_of_its_own_is_not_dropped_silently(tmp_path):
    """No column reads as a timestamp: the row order becomes the time, and a warning names the
    unused columns and how to point at the time column; naming it removes the warning and
    orders by it."""
    import warnings

    from recaudit.errors import RecauditWarning

    path = tmp_path / "plays.csv"
    path.write_text("user,item,played_at\n1,10,300\n1,11,100\n2,10,200\n")
    with pytest.warns(RecauditWarning, match=r"row order is taken as time.*played_at"):
        log = read_csv(path)
    assert list(log.timestamp) == [0, 1, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", RecauditWarning)
        named = read_csv(path, columns={"timestamp": "played_at"})
    assert sorted(named.timestamp) == [100, 200, 300]
