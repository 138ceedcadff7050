"""The results store: declared tables, typed Arrow writes, transactions, questions.

Runs in the dependency-floor job too (``make floors``): nothing here needs an optional extra.
"""

import json
import signal

import numpy as np
import pandas as pd
import pytest

from recaudit.errors import RecauditError
from recaudit.audit import QUERY_METRICS, QUERY_RESULTS, TRIALS, AuditStore
from recaudit.experiment import TABLES, merge_stores, shared_trials
from recaudit.simulate import read_results


def _queries(n, rbo):
    z = np.zeros(n)
    cols = {m: z for m in QUERY_METRICS}
    cols["rbo"] = np.asarray(rbo, dtype=float)
    return pd.DataFrame({"query": np.arange(n), "user": np.arange(n), "target": np.arange(n),
                         **cols})


def _row(tid, **kw):
    return {"trial_id": tid, "dataset": "d", "model": "m", "model_label": "m",
            "perturbation": "p", "seed": 0, "status": "done", **kw}


def test_ensure_creates_every_declared_table(tmp_path):
    import recaudit.fuzz  # noqa: F401  (the studies declare their tables when imported)
    import recaudit.properties  # noqa: F401
    import recaudit.simulate  # noqa: F401

    with AuditStore(tmp_path / "s.duckdb") as st:
        assert st.tables() == {"meta"}          # a study's tables appear when it writes
        st.ensure(*TABLES.values())
        assert set(TABLES) <= st.tables()
        for name, table in TABLES.items():
            assert list(st.read(name).columns) == table.names
        assert st.holds() == {n: 0 for n in TABLES if n not in ("meta", "plans")}


def test_tables_and_columns_are_what_show_tables_and_describe_list(tmp_path):
    """``tables()`` and ``_present`` read DuckDB's catalogue (cheaper): the same names as
    ``SHOW TABLES`` (views, temporary and registered tables included) and ``DESCRIBE``."""
    import pyarrow as pa

    with AuditStore(tmp_path / "s.duckdb") as st:
        st.ensure(TRIALS)
        st.con.execute("CREATE VIEW v AS SELECT 1 AS x")
        st.con.execute("CREATE TEMP TABLE tt (x BIGINT)")
        st.con.register("reg", pa.table({"x": [1]}))
        st.con.execute("CREATE SCHEMA other")
        st.con.execute("CREATE TABLE other.elsewhere (x BIGINT)")
        shown = {r[0] for r in st.con.execute("SHOW TABLES").fetchall()}
        assert st.tables() == shown == {"meta", "trials", "v", "tt", "reg"}
        described = set(st.con.execute("DESCRIBE trials").df()["column_name"])
        assert st._present("trials") == described == set(TRIALS.names)


def test_text_columns_of_any_pandas_dtype_are_written_through_arrow(tmp_path):
    """Pandas 3's ``str`` dtype (and the older ``string`` and ``object``) all land as VARCHAR;
    DuckDB 1.x could not register such frames itself (the crash of an audit on the floors)."""
    labels = pd.Series(["a", "b", None], dtype="string")
    rows = pd.DataFrame({"scenario": labels, "algorithm": pd.Series(["x", "y", "z"], dtype=object),
                         "mix": [0.5, np.nan, 1.0], "seed": np.array([0, 1, 2], np.int32),
                         "round": pd.array([None, 1, 2], dtype="Int64"),
                         "metric": ["ctr"] * 3, "value": [0.1, 0.2, 0.3]})
    with AuditStore(tmp_path / "s.duckdb") as st:
        assert st.insert("mirror_results", rows) == 3
        back = read_results(st)
    assert back["scenario"].tolist()[:2] == ["a", "b"] and pd.isna(back["scenario"].iloc[2])
    assert pd.isna(back["mix"].iloc[1]) and back["mix"].iloc[2] == 1.0  # NaN is NULL
    assert pd.isna(back["round"].iloc[0]) and back["round"].iloc[2] == 2
    assert back["seed"].tolist() == [0, 1, 2]


def test_a_trial_is_written_whole_or_not_at_all(tmp_path):
    with AuditStore(tmp_path / "s.duckdb") as st:
        st.write_trial(_row("t0"), _queries(3, [1, 0.5, 0.2]), {"kind": "delete"})
        with pytest.raises(KeyError):  # a query frame without a declared column
            st.write_trial(_row("t1"), _queries(3, [1, 1, 1]).drop(columns=["rbo"]), None)
        with pytest.raises(ValueError, match="has no columns"):  # an undeclared column
            st.write_trial(_row("t2", colour="red"), _queries(2, [1, 1]), None)
        assert st.finished() == {"t0"} and len(st.query_results()) == 3
        assert st.records() == {"t0": {"kind": "delete"}}
        # rewriting a trial replaces its rows instead of adding to them
        st.write_trial(_row("t0"), _queries(2, [0.0, 1.0]), None)
        assert st.trial_means(("rbo",)).set_index("trial_id").loc["t0", "rbo"] == 0.5


def test_a_failing_block_rolls_back_every_write_in_it(tmp_path):
    import recaudit.fuzz  # noqa: F401  declares fuzz_trials, written by name here

    with AuditStore(tmp_path / "s.duckdb") as st:
        with pytest.raises(RuntimeError), st.transaction():
            st.set_meta("a", 1)
            st.insert("fuzz_trials", [{"trial_id": "f", "heuristic": "AMR"}])
            raise RuntimeError("boom")
        assert st.meta() == {} and st.ids("fuzz_trials") == set()
        st.set_meta("a", {"x": [1, 2]})
        st.set_meta("a", {"x": [3]})  # replaced, not duplicated
        assert st.meta() == {"a": {"x": [3]}}


def test_keyed_rows_deleted_and_written_again_in_one_transaction(tmp_path):
    """What a resumed run does to its plan (and a rewritten trial to its rows): delete the
    keyed rows, insert the same keys, one transaction. DuckDB before 1.2.2 refused it as a
    duplicate key (a resume failed on the floors), hence the floor."""
    from recaudit.experiment import PLANS

    plan = {"kind": ["audit"] * 2, "plan": ["p"] * 2, "trial_id": ["t0", "t1"]}
    with AuditStore(tmp_path / "s.duckdb") as st:
        st.insert(PLANS, plan)
        for _ in range(2):
            with st.transaction():
                st.delete("plans", plan="p")
                st.insert(PLANS, plan)
        assert sorted(st.plans("audit")["trial_id"]) == ["t0", "t1"]


def test_replace_rows_replaces_by_key_including_null_keys(tmp_path):
    def rows(value):
        return pd.DataFrame({"scenario": ["s", "s"], "algorithm": ["algo", "oracle"],
                             "mix": [0.5, None], "seed": [0, 0], "round": [None, None],
                             "metric": ["ctr", "ctr"], "value": [value, value]})

    with AuditStore(tmp_path / "s.duckdb") as st:
        st.replace_rows("mirror_results", rows(0.1), ("scenario", "algorithm", "mix", "seed"))
        st.replace_rows("mirror_results", rows(0.2), ("scenario", "algorithm", "mix", "seed"))
        back = read_results(st)
    assert len(back) == 2 and (back["value"] == 0.2).all()


def test_questions_agree_with_pandas(tmp_path):
    rng = np.random.default_rng(3)
    with AuditStore(tmp_path / "s.duckdb") as st:
        for tid, pert in (("a", "x"), ("b", "y")):
            st.write_trial(_row(tid, perturbation=pert, seed=1), _queries(40, rng.random(40)),
                           None)
        q = st.query_results()
        means = st.trial_means(("rbo",)).set_index("trial_id")["rbo"]
        dist = st.metric_distribution("rbo").set_index("perturbation")
        paired = st.paired_values("y", "rbo")
        with pytest.raises(ValueError, match="unknown per-query metric"):
            st.metric_distribution("rbo; DROP TABLE trials")
    for tid, g in q.groupby("trial_id"):
        assert means[tid] == pytest.approx(g["rbo"].mean())
    b = q[q.trial_id == "b"]["rbo"].to_numpy()
    assert dist.loc["y", "median"] == pytest.approx(np.median(b))
    assert dist.loc["y", "q1"] == pytest.approx(np.quantile(b, 0.25))
    assert paired["value"].to_numpy() == pytest.approx(b) and set(paired["seed"]) == {1}


def test_stores_of_an_older_layout_are_refused_for_writing(tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE trials (trial_id VARCHAR PRIMARY KEY, perturbation VARCHAR)")
    con.close()
    with pytest.raises(RecauditError, match="older recaudit.*family"):
        AuditStore(path).ensure_audit()
    with AuditStore(path, read_only=True) as st:  # still readable
        assert len(st.trials()) == 0


def test_export_writes_the_tables_that_hold_rows(tmp_path):
    with AuditStore(tmp_path / "s.duckdb") as st:
        st.write_trial(_row("t"), _queries(2, [1, 1]), {"k": 1})
        st.set_meta("config", {"name": "x"})
        paths = {p.name for p in st.export(tmp_path / "out", "csv")}
        with pytest.raises(RecauditError, match="export format"):
            st.export(tmp_path / "out", "xlsx")
    assert paths == {"trials.csv", "query_results.csv", "perturbations.csv", "meta.csv"}
    assert json.loads(pd.read_csv(tmp_path / "out" / "meta.csv")["value"][0]) == {"name": "x"}


def test_declared_columns_are_the_ones_the_runner_produces():
    from recaudit.audit import compare
    from recaudit.data import RankLists, split, synthetic

    log = synthetic(seed=1, n_users=20, n_items=15, n_clusters=3, mean_length=12)
    parts = split(log, "leave-last-out")
    lists = RankLists(np.tile(np.arange(15, dtype=np.int32), (len(parts.queries), 1)))
    frame = compare(lists, lists, parts, k=5, p=0.9)
    assert ["trial_id", *frame.columns] == QUERY_RESULTS.names
    assert {"family", "edit", "count", "position", "reference"} <= set(TRIALS.names)


def test_merge_adds_the_trials_the_other_store_holds_and_this_one_lacks(tmp_path, capsys):
    """Two machines fill two stores of one audit: merging gives the union, a trial both hold
    keeps the first store's rows, and merging again adds nothing."""
    from recaudit.cli import main

    a, b = tmp_path / "cpu.duckdb", tmp_path / "gpu.duckdb"
    with AuditStore(a) as st:
        st.write_trial(_row("t0"), _queries(3, [1, 0.5, 0.2]), {"kind": "delete"})
        st.set_meta("config", {"from": "cpu"})
    with AuditStore(b) as st:
        st.write_trial(_row("t0", host="gpu"), _queries(2, [0.0, 0.0]), {"kind": "other"})
        st.write_trial(_row("t1", host="gpu"), _queries(4, [0.9, 0.8, 0.7, 0.6]), None)
        st.write_trial(_row("t2", host="gpu"), _queries(1, [0.1]), {"kind": "insert"})
        st.set_meta("config", {"from": "gpu"})
    with AuditStore(a) as st:
        added = merge_stores(st, b)
        assert added["trials"] == 2 and added["query_results"] == 5
        assert st.finished() == {"t0", "t1", "t2"}
        means = st.trial_means(("rbo",)).set_index("trial_id")["rbo"]
        assert means["t0"] == pytest.approx(1.7 / 3)       # ours, not the other store's
        assert means["t1"] == pytest.approx(0.75) and means["t2"] == pytest.approx(0.1)
        assert st.records() == {"t0": {"kind": "delete"}, "t2": {"kind": "insert"}}
        assert st.meta()["config"] == {"from": "cpu"}
        assert set(merge_stores(st, b).values()) == {0}         # nothing new the second time
    assert main(["merge", str(b), str(a)]) == 0             # the other way round, by the CLI
    assert "trials 0" not in capsys.readouterr().out
    with AuditStore(b, read_only=True) as st:
        assert st.finished() == {"t0", "t1", "t2"}
        assert st.trial_means(("rbo",)).set_index("trial_id")["rbo"]["t0"] == 0.0


def test_merge_takes_a_store_that_keeps_its_data_in_a_fresh_process(tmp_path):
    """An audit keeps its filtered log in the store (table ``datasets``). `recaudit merge`
    imports the studies' table declarations only, so the table must be declared among them:
    in a fresh interpreter, where the audit's data module was never imported, the merge used
    to refuse such a store as 'holds tables no study declares: datasets'."""
    import subprocess
    import sys

    from recaudit.audit._data import keep_data
    from recaudit.data import synthetic
    from recaudit.experiment import DatasetSpec

    a, b = tmp_path / "cpu.duckdb", tmp_path / "gpu.duckdb"
    with AuditStore(a) as st:
        st.write_trial(_row("t0"), _queries(2, [1.0, 0.5]), None)
    with AuditStore(b) as st:
        st.write_trial(_row("t1", host="gpu"), _queries(1, [0.2]), None)
        keep_data(st, "synthetic", DatasetSpec(), synthetic(n_users=5, n_items=12, seed=0))
    out = subprocess.run([sys.executable, "-m", "recaudit", "merge", str(a), str(b)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "datasets 1" in out.stdout and "trials 1" in out.stdout
    with AuditStore(a, read_only=True) as st:
        assert st.finished() == {"t0", "t1"}
        assert len(st.sql("SELECT * FROM datasets")) == 1


def test_merge_says_whether_the_trials_both_stores_hold_agree(tmp_path, capsys):
    """The same trial run on two machines: identical per-query rows, or the trials that
    differ (by one ulp too), whatever the row order; keyed tables (timings, host) are not
    compared."""
    from recaudit.cli import main

    a, b = tmp_path / "h200.duckdb", tmp_path / "h100.duckdb"
    nudged = np.nextafter(0.5, 1.0)
    with AuditStore(a) as st:
        st.write_trial(_row("same"), _queries(3, [1.0, 0.5, 0.2]), None)
        st.write_trial(_row("ulp"), _queries(2, [0.5, 0.25]), None)
        st.write_trial(_row("mine"), _queries(1, [0.3]), None)
    with AuditStore(b) as st:
        st.write_trial(_row("same", host="other", fit_seconds=9.0),
                       _queries(3, [1.0, 0.5, 0.2]).iloc[::-1], None)
        st.write_trial(_row("ulp"), _queries(2, [nudged, 0.25]), None)
        st.write_trial(_row("theirs"), _queries(1, [0.4]), None)
    with AuditStore(a, read_only=True) as st:
        agreement, = shared_trials(st, b)
    assert agreement.table == "query_results" and agreement.shared == 2
    assert agreement.differing == ("ulp",) and agreement.same == 1
    assert main(["merge", str(a), str(b)]) == 0
    out, err = capsys.readouterr()
    assert "query_results 1" in out and "2 trial(s) in both" in err
    assert "different in 1 (ulp)" in err and f"kept {a}'s rows" in err
    with AuditStore(a, read_only=True) as st:
        assert shared_trials(st, b)[0].shared == 3  # 'theirs' came across whole
        assert st.trial_means(("rbo",)).set_index("trial_id")["rbo"]["ulp"] == 0.375


def test_merge_refuses_what_it_cannot_merge(tmp_path):
    a = tmp_path / "a.duckdb"
    with AuditStore(a) as st:
        st.write_trial(_row("t0"), _queries(1, [1.0]), None)
        with pytest.raises(RecauditError, match="no results store"):
            merge_stores(st, tmp_path / "missing.duckdb")
        with pytest.raises(RecauditError, match="into itself"):
            merge_stores(st, a)
    import duckdb

    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("CREATE TABLE colours (name VARCHAR)")
    con.close()
    with AuditStore(a) as st:
        with pytest.raises(RecauditError, match="no study declares: colours"):
            merge_stores(st, other)
        assert st.finished() == {"t0"}
    busy = tmp_path / "busy.duckdb"
    holder = AuditStore(busy)
    try:
        import subprocess
        import sys

        code = ("import sys; from recaudit.audit import AuditStore\n"
                "from recaudit.experiment import StoreBusyError, merge_stores\n"
                f"st = AuditStore({str(a)!r})\n"
                f"try:\n    merge_stores(st, {str(busy)!r})\nexcept StoreBusyError as e:\n"
                "    print('busy:', e); sys.exit(3)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 3 and "in use by another process" in out.stdout, out.stderr
    finally:
        holder.close()


class _FullDisk:
    """A connection whose COMMIT fails as DuckDB's does on a full disk (its WAL write fails,
    the transaction is gone: a ROLLBACK after it is an error too)."""

    def __init__(self, con):
        self._con = con

    def execute(self, sql, *args):
        import duckdb

        if sql == "COMMIT":
            self._con.execute("ROLLBACK")
            raise duckdb.TransactionException(
                'TransactionContext Error: Failed to commit: Could not write file '
                '"/data/s.duckdb.wal": No space left on device')
        return self._con.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._con, name)


def test_a_commit_on_a_full_disk_is_a_storage_error_and_keeps_what_was_committed(tmp_path):
    from recaudit.errors import StorageError

    path = tmp_path / "s.duckdb"
    with AuditStore(path) as st:
        st.write_trial(_row("t0"), _queries(3, [1, 0.5, 0.2]), None)
        real, st.con = st.con, _FullDisk(st.con)
        with pytest.raises(StorageError) as info:
            st.write_trial(_row("t1"), _queries(2, [1, 1]), None)
        st.con = real
        # the commit's own error is the cause; the failing ROLLBACK after it is not chained
        assert "Failed to commit" in str(info.value.__cause__)
        assert "rollback" not in str(info.value.__cause__.__context__ or "")
    err = info.value
    assert str(err) == (f"cannot write {path}: no space left on the device; free space there, "
                        "or write elsewhere")
    assert isinstance(err, OSError) and err.errno == 28 and err.full
    with AuditStore(path, read_only=True) as st:
        assert st.finished() == {"t0"} and len(st.query_results()) == 3


# ------------------------------------------------------------------ interrupts in a query
def test_duckdb_reports_an_interrupted_query_as_an_error_we_recognise():
    """What ``Interrupted.swallowed`` relies on. DuckDB runs a signal's handler during a query
    and raises ``RuntimeError('Query interrupted')`` instead of the handler's
    ``KeyboardInterrupt`` (measured with duckdb 2.0.1: a SIGINT 0.3-0.5 s into a long query;
    when it looks for signals is up to its scheduler, 6 of 9 tries, so this test interrupts
    the query the way DuckDB's own check does, ``interrupt()``, which raises the same
    error)."""
    import threading

    import duckdb

    from recaudit.errors import Interrupted

    con = duckdb.connect()
    stop = threading.Timer(0.3, con.interrupt)
    stop.start()
    try:
        with pytest.raises(Exception) as info:
            con.execute("SELECT count(*) FROM range(10000000000000)").fetchall()
    finally:
        stop.cancel()
        con.close()
    assert Interrupted.swallowed(info.value) is not None, repr(info.value)


def test_interrupted_recognises_duckdbs_errors_and_nothing_else():
    import duckdb

    from recaudit.errors import Interrupted

    assert Interrupted.swallowed(RuntimeError("Query interrupted")).signum == signal.SIGINT
    assert Interrupted.swallowed(duckdb.InterruptException("INTERRUPT Error: Interrupted!"),
                                 signal.SIGTERM).exit_code == 143
    try:  # one raised from it (a wrapper's error) counts too
        try:
            raise RuntimeError("Query interrupted")
        except RuntimeError as inner:
            raise RecauditError("could not read the store") from inner
    except RecauditError as outer:
        assert Interrupted.swallowed(outer) is not None
    for other in (RuntimeError("Query failed"), ValueError("Query interrupted"),
                  duckdb.IOException("disk full"), KeyboardInterrupt()):
        assert Interrupted.swallowed(other) is None


def test_a_store_write_interrupted_inside_duckdb_rolls_back_as_an_interrupt(tmp_path):
    from recaudit.errors import Interrupted

    with AuditStore(tmp_path / "s.duckdb") as st:
        st.ensure(TRIALS)
        with pytest.raises(Interrupted) as info:
            with st.transaction():
                st.insert(TRIALS, [_row("t1")])
                raise RuntimeError("Query interrupted")  # what DuckDB raised for a Ctrl-C
        assert info.value.exit_code == 130
        assert st.count(TRIALS) == 0   # rolled back: nothing half written
        with pytest.raises(RuntimeError, match="other"):  # any other error stays itself
            with st.transaction():
                raise RuntimeError("other")
