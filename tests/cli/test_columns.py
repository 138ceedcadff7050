"""Issue 40, item 4: a text file's header is recognised, and a file whose columns are not
named after their roles gets one error naming its columns and the ``--column`` flags to add
(through the command's entry, ``recaudit.cli.main``, as a user meets it)."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.audit import AuditStore

from ._entry import one_error, recaudit_here, with_model


def _rows(n_users: int = 30, per_user: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    names = ["ann", "bob", "cat", "dan", "eve", "fay", "gus", "hal", "ida", "jon"]
    items = ["apple", "pear", "plum", "fig", "kiwi", "lime", "date", "nut", "yam", "pea",
             "bean", "corn"]
    # user and item ids are words without digits: only the header's names can tell it apart
    users = [f"{a}{b}" for a in names for b in ("x", "y", "z")][:n_users]
    return [(u, items[int(rng.integers(len(items)))], 1_700_000_000 + 60 * (per_user * i + t))
            for i, u in enumerate(users) for t in range(per_user)]


@pytest.fixture
def folder(tmp_path):
    rows = _rows()
    (tmp_path / "two.csv").write_text(
        "customer,product\n" + "".join(f"{u},{i}\n" for u, i, _ in rows))
    (tmp_path / "three.csv").write_text(
        "customer,product,ts\n" + "".join(f"{u},{i},2023-11-14T22:{t % 3600 // 60:02d}:00Z\n"
                                          for u, i, t in rows))
    return tmp_path


def test_a_two_column_header_is_not_read_as_an_interaction(folder):
    # before: `customer,product` became the interaction (user customer, item product) and
    # the audit ran on it; now the header is seen and its columns must be named
    err = one_error(recaudit_here("audit", "--dataset", "two.csv", "--dry-run", cwd=folder))
    assert "columns: customer, product" in err
    assert "--column user=customer --column item=product on the command line" in err
    named = recaudit_here("audit", "--dataset", "two.csv", "--column", "user=customer",
                     "--column", "item=product", "--model", with_model(folder), "--seeds",
                     "1", "-p", "random-delete", "-o", "two.duckdb", cwd=folder)
    assert named.returncode == 0, named.stderr
    with AuditStore(folder / "two.duckdb", read_only=True) as store:
        (data,) = store.meta()["data"].values()
    assert (data["interactions"], data["users"]) == (len(_rows()), 30)  # the header is no row


def test_a_mistyped_column_flag_names_the_files_columns_and_the_fix(folder):
    err = one_error(recaudit_here("audit", "--dataset", "two.csv", "--column", "user=custmer",
                             "--column", "item=product", "--dry-run", cwd=folder))
    assert "no header" not in err  # the Python-API wording of before
    assert "no column 'custmer' for the user (did you mean 'customer'?)" in err
    assert "(columns: customer, product)" in err and "--column user=customer on the" in err


def test_a_time_column_under_its_own_name_is_named_not_misread(folder):
    # before: no header was seen, and the error said the timestamp 'ts' is not a number
    err = one_error(recaudit_here("audit", "--dataset", "three.csv", "--dry-run", cwd=folder))
    assert "not a number" not in err and "neither a number" not in err
    assert ("--column user=customer --column item=product --column timestamp=ts on the "
            "command line") in err
    ok = recaudit_here("audit", "--dataset", "three.csv", "--column", "user=customer", "--column",
                  "item=product", "--column", "timestamp=ts", "--model", with_model(folder),
                  "--seeds", "1", "-p", "random-delete", "-o", "three.duckdb", cwd=folder)
    assert ok.returncode == 0, ok.stderr


def test_names_given_for_a_headerless_file_say_that_it_has_none(tmp_path):
    (tmp_path / "plain.csv").write_text("".join(f"{u},{i},{t}\n" for u, i, t in _rows()))
    err = one_error(recaudit_here("audit", "--dataset", "plain.csv", "--column", "user=customer",
                             "--dry-run", cwd=tmp_path))
    assert "the first line, 'annx," in err and "is data, not a header" in err
    assert "3 as user item timestamp" in err


# issue 60, item 4: --column and --sep on a file of a published release's format (MovieLens,
# the CASPER TSVs) crashed with "unexpected TypeError: read_movielens() got an unexpected
# keyword argument 'columns'"; the options now describe the file, read as plain text (a
# warning says so, then the plain reader's own error when the options do not fit)


def _error(proc) -> str:
    """The ``error: ...`` line of a failed command (exit 2), after the reading's warning."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    *before, last = proc.stderr.strip().splitlines()
    assert last.startswith("error: ") and all(x.startswith("warning: ") for x in before)
    assert "read as a plain" in before[0]
    return last


def test_column_on_movielens_ratings_reads_it_as_the_plain_csv_it_describes(shared_data,
                                                                            tmp_path):
    ratings = str(shared_data / "ml-latest-small" / "ratings.csv")
    err = _error(recaudit_here("audit", "--dataset", ratings, "--column", "user=user_id",
                               "--dry-run", cwd=tmp_path))
    assert "unexpected" not in err
    assert "no column 'user_id' for the user (did you mean 'userId'?)" in err
    # named right, the file reads as the same interactions as the MovieLens reader gives
    import warnings

    from recaudit.data import read
    from recaudit.errors import RecauditWarning

    with pytest.warns(RecauditWarning, match="ratings.csv: read as a plain CSV"):
        plain = read(ratings, columns={"user": "userId", "item": "movieId"})
    release = read(ratings)
    assert (len(plain), plain.n_users, plain.n_items) == (len(release), release.n_users,
                                                         release.n_items)
    assert np.array_equal(plain.timestamp, release.timestamp)
    # a format named outright takes no layout: an error naming the options it does take
    from recaudit.errors import DataError

    with warnings.catch_warnings(), pytest.raises(DataError, match=r"the movielens format "
                                                  r"takes no columns option \(it takes .*"
                                                  r"duplicates"):
        read(ratings, format="movielens", columns={"user": "userId"})


def test_sep_on_the_foursquare_tsv_is_the_plain_tsv_it_describes(shared_data, tmp_path):
    tsv = str(shared_data / "foursquare.tsv")
    err = _error(recaudit_here("audit", "--dataset", tsv, "--sep", ",", "--dry-run",
                               cwd=tmp_path))
    assert "unexpected" not in err
    assert "only one column found with sep=','" in err and "--sep '\\t'" in err
    from recaudit.data import read
    from recaudit.errors import RecauditWarning

    with pytest.warns(RecauditWarning, match="foursquare.tsv: read as a plain TSV"):
        plain = read(tsv, sep="\t")
    release = read(tsv)
    assert (len(plain), plain.n_users, plain.n_items) == (len(release), release.n_users,
                                                         release.n_items)


def test_the_hint_names_the_item_and_the_time_too(tmp_path):
    # issue 60, item 9: a file with `mid` and `when` got `--column item=<column>` and no
    # word of its time; the one column left is the item's, `when` the time's
    rows = _rows()
    (tmp_path / "f.csv").write_text("uid,mid,rating,when\n" + "".join(
        f"{i},{j},{1 + i % 5},{t}\n" for i, (_, j, t) in enumerate(rows)))
    err = one_error(recaudit_here("audit", "--dataset", "f.csv", "--dry-run", cwd=tmp_path))
    assert "<column>" not in err
    assert ("--column user=uid --column item=mid --column timestamp=when on the command "
            "line") in err
