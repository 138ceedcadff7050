"""Issue 47, item 1: a dataset given by its path alone is labelled by its file, never
``synthetic`` (the default name), wherever the audit names it: ``summary()``, the store, the
command's table, the report; through the Python API, a TOML ``[[datasets]]`` table with only
``path =``, and ``--dataset FILE``. A store written before, which named such a file
``synthetic``, keeps its label when resumed."""

from __future__ import annotations

import duckdb
import pytest

from recaudit.audit import AuditConfig, AuditStore, DatasetSpec, ModelSpec, run_audit, summary
from recaudit.report import build_report, render_markdown

from ._entry import recaudit_here, tiny_log, with_model


def test_a_path_alone_is_labelled_by_the_file():
    assert DatasetSpec(path="data/interactions.csv").label == "interactions.csv"
    assert DatasetSpec.from_dict({"path": "interactions.csv"}).label == "interactions.csv"
    assert DatasetSpec().label == "synthetic"  # no file: the built-in generator
    # the trial ids are what they were (the identity keeps the default name); the spec as
    # data (a store's config, the report's) names no generator
    from recaudit.experiment import identity

    spec = DatasetSpec(path="x.csv")
    assert identity(spec)["name"] == "synthetic" and "name" not in spec.to_dict()
    assert DatasetSpec.from_dict(spec.to_dict()) == spec


def test_the_python_api_stores_and_summarises_the_file(tmp_path, monkeypatch):
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = AuditConfig(models=(ModelSpec(model),), perturbations=("random-delete", "seed-only"),
                      seeds=(0, 1), output="api.duckdb", metrics={"k": 5},
                      datasets=(DatasetSpec(path="tiny.csv", min_user_interactions=0),))
    store = run_audit(cfg)
    assert set(summary(store).dataset) == {"tiny.csv"}
    with AuditStore(store, read_only=True) as s:
        assert set(s.trials().dataset) == {"tiny.csv"}
    text = render_markdown(build_report(store, figures=False))
    assert "tiny.csv" in text and "synthetic" not in text


def test_a_toml_table_with_a_path_alone(tmp_path):
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    (tmp_path / "a.toml").write_text(f"""
name = "mine"
output = "toml.duckdb"
seeds = 2
perturbations = ["random-delete", "seed-only"]
models = ["{model}"]

[[datasets]]
path = "tiny.csv"
min_user_interactions = 0

[metrics]
k = 5
""")
    proc = recaudit_here("run", "a.toml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{model} on tiny.csv" in proc.stdout and "synthetic" not in proc.stdout
    assert set(summary(tmp_path / "toml.duckdb").dataset) == {"tiny.csv"}


def test_the_command_labels_the_file(tmp_path):
    tiny_log(tmp_path)
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", with_model(tmp_path),
                         "--seeds", "1", "--k", "5", "-p", "random-delete", "-o", "c.duckdb",
                         cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "on tiny.csv" in proc.stdout and "synthetic" not in proc.stdout
    assert set(summary(tmp_path / "c.duckdb").dataset) == {"tiny.csv"}


@pytest.mark.parametrize("old", ["synthetic", "synthetic:tiny.csv"])
def test_a_store_that_called_the_file_synthetic_keeps_it_when_resumed(tmp_path, old):
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    (tmp_path / "a.toml").write_text(f"""
output = "old.duckdb"
seeds = 1
perturbations = ["random-delete"]
models = ["{model}"]
datasets = [{{ path = "tiny.csv", min_user_interactions = 0 }}]
metrics = {{ k = 5 }}
""")
    assert recaudit_here("run", "a.toml", cwd=tmp_path).returncode == 0
    con = duckdb.connect(str(tmp_path / "old.duckdb"))  # what the store held before
    con.execute(f"UPDATE trials SET dataset = '{old}'")
    con.close()
    text = (tmp_path / "a.toml").read_text().replace("seeds = 1", "seeds = 2")
    (tmp_path / "a.toml").write_text(text)
    proc = recaudit_here("run", "a.toml", cwd=tmp_path)  # one seed more
    assert proc.returncode == 0, proc.stderr
    with AuditStore(tmp_path / "old.duckdb", read_only=True) as s:
        trials = s.trials()
    assert len(trials) == 2 and set(trials.dataset) == {old}  # not split in two


def test_a_real_synthetic_dataset_in_the_store_lends_no_label(tmp_path):
    """The store's ``synthetic`` trials of the generator are not the file's: a file audited
    into the same store is not labelled ``synthetic`` — it is refused, as any audit of other
    data into a store is (issue 60), and the store keeps the generator's trials alone."""
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    base = ["--model", model, "--seeds", "1", "--k", "5", "-p", "random-delete", "-o",
            "mixed.duckdb", "--min-interactions", "0"]
    proc = recaudit_here("audit", "--dataset", "synthetic", *base, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "a.toml").write_text(f"""
output = "mixed.duckdb"
seeds = 1
perturbations = ["random-delete"]
models = ["{model}"]
datasets = [{{ path = "tiny.csv", min_user_interactions = 0 }}]
metrics = {{ k = 5 }}
""")
    proc = recaudit_here("run", "a.toml", cwd=tmp_path)
    assert proc.returncode == 2 and "holds an audit of" in proc.stderr
    assert "whose data synthetic differ" in proc.stderr
    with AuditStore(tmp_path / "mixed.duckdb", read_only=True) as s:
        assert sorted(s.trials().dataset) == ["synthetic"]
