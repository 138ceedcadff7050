"""A store written before the redesign (commit 0c41219) still reads, plans the same trial ids
and extends (``tests/data/legacy_0c41219``)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from recaudit.audit import AuditConfig, AuditStore, plan, run_audit, trial_summary

HERE = Path(__file__).resolve().parents[1] / "data" / "legacy_0c41219"


@pytest.fixture
def legacy(tmp_path) -> Path:
    """The legacy store, rebuilt from its exported schema and tables."""
    path = tmp_path / "legacy.duckdb"
    con = duckdb.connect(str(path))
    con.execute((HERE / "schema.sql").read_text())
    for table in sorted(HERE.glob("*.parquet")):
        con.execute(f"COPY {table.stem} FROM '{table.as_posix()}' (FORMAT PARQUET)")
    con.close()
    return path


def _config(path: Path, **extra) -> AuditConfig:
    with AuditStore(path, read_only=True) as st:
        data = dict(st.meta()["config"])
    data.update(output=str(path), **extra)
    return AuditConfig.from_dict(data)


def test_the_legacy_audit_reads_under_todays_names(legacy):
    s = trial_summary(legacy)
    assert len(s) == 10 and (s["draw"] == 0).all()
    none = s[s.perturbation == "none"]
    assert (none.rbo == 1.0).all() and (none.mrr_base == none.mrr_pert).all()
    with AuditStore(legacy, read_only=True) as st:
        q = st.query_results()
    assert {"mrr_base", "mrr_pert"} <= set(q.columns) and "rr_base" not in q.columns


def test_todays_plan_of_the_legacy_config_has_the_stored_trial_ids(legacy):
    cfg = _config(legacy)
    with AuditStore(legacy, read_only=True) as st:
        stored = set(st.trials()["trial_id"])
    assert {tid for _, tid, _ in plan(cfg)} == stored


def test_resuming_runs_nothing_and_a_new_trial_extends_the_store(legacy):
    events = []
    run_audit(_config(legacy), progress=lambda e, t, d, n: events.append((e, d, n)))
    assert events == [("skip", 10, 10)]
    cfg = _config(legacy, draws=2, perturbations=["random-delete"], seeds=[0])
    run_audit(cfg)  # draw 0 is the stored trial; draw 1 is new
    s = trial_summary(legacy)
    assert len(s) == 11 and sorted(s[s.perturbation == "random-delete"].draw) == [0, 0, 1]
    con = duckdb.connect(str(legacy), read_only=True)
    cols = set(con.execute("DESCRIBE query_results").df()["column_name"])
    con.close()
    assert {"mrr_base", "mrr_pert"} <= cols and "rr_base" not in cols  # migrated in place


def test_every_study_of_the_legacy_store_is_found_and_reported(legacy):
    pytest.importorskip("matplotlib")
    from recaudit.report import build_report
    from recaudit.studies import status

    kinds = {s.study.kind: s for s in status(legacy)}
    assert set(kinds) == {"audit", "fuzz", "mirror"}
    assert kinds["audit"].done == 10 and kinds["audit"].planned == 10  # the stored grid
    assert kinds["fuzz"].done == 4  # two heuristics x two sets
    report = build_report(legacy, figures=False)
    assert {"rls", "properties", "fuzz", "mirror", "setup"} <= {s.key for s in report.sections}
