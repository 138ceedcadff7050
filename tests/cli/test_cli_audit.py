import pytest

from recaudit.cli import main

from .conftest import TINY



def test_run_status_results_export(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    store = tmp_path / "s.duckdb"
    cfg.write_text(TINY.format(out=store))
    assert main(["run", str(cfg)]) == 0
    out = capsys.readouterr().out
    assert "random-delete" in out and "95 % interval" in out and "RBO" in out
    assert main(["status", str(store)]) == 0
    assert "2 of the 2 planned trials done" in " ".join(capsys.readouterr().out.split())
    assert main(["status", str(tmp_path)]) == 0       # a folder: each store in it
    # (a long path wraps anywhere at the console's width: compared without white space)
    assert f"{store}:stabilityaudit:2ofthe2plannedtrialsdone" in \
        "".join(capsys.readouterr().out.split())
    (tmp_path / "empty").mkdir()
    assert main(["status", str(tmp_path / "empty")]) == 2
    assert "is a folder without a results store" in capsys.readouterr().err
    assert main(["results", str(store), "--format", "csv"]) == 0
    import io

    import pandas as pd

    table = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(table) == 2
    assert table.set_index("perturbation").loc["none", "rbo"] == 1.0
    assert main(["export", str(store), str(tmp_path / "x"), "--format", "parquet"]) == 0
    assert (tmp_path / "x" / "query_results.parquet").exists()


@pytest.mark.parametrize("argv, needle", [
    (["run", "does-not-exist.toml"], "cannot read config"),
    (["audit", "--model", "gru4rc", "--seeds", "1"], "Did you mean 'gru4rec'"),
    (["audit", "--perturbation", "random-delet", "--seeds", "1"], "random-delete"),
    (["audit", "--param", "epochs", "--seeds", "1"], "KEY=VALUE"),
    (["results", "nope.duckdb"], "no results store"),
])
def test_errors_are_one_clean_line_and_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert err.startswith("error: ")


def test_debug_flag_shows_the_exception(tmp_path, monkeypatch):
    from recaudit.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError):
        main(["--debug", "run", "does-not-exist.toml"])


def test_verbose_logs_each_trial(tmp_path, capsys, caplog):
    import logging

    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.format(out=tmp_path / "v.duckdb"))
    try:
        with caplog.at_level(logging.INFO, logger="recaudit"):
            assert main(["-v", "run", str(cfg)]) == 0
    finally:
        logging.getLogger("recaudit").setLevel(logging.NOTSET)
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("recaudit.")]
    assert sum(" done in " in m for m in messages) == 2
    assert any("trials to run" in m for m in messages)


def test_story_reads_each_model_in_one_line_against_the_floors():
    import pandas as pd

    from recaudit.cli._readings import story

    def row(model, pert, rbo, p_seed, p_rerun=0.0, queries=120):
        return {"dataset": "d", "model": model, "perturbation": pert, "rbo": rbo,
                "p_vs_seed_only": p_seed, "p_vs_rerun": p_rerun, "queries": queries}

    frame = pd.DataFrame([
        row("m", "random-delete", 0.912, 1e-6), row("m", "latest-random-delete", 0.70, 0.4),
        row("m", "casper-delete", 0.61, 0.003), row("m", "seed-only", 0.694, float("nan")),
        row("m", "none", 1.0, 0.0, float("nan")),
        row("n", "random-delete", 0.99, 0.3, 0.2, queries=6),
        row("n", "casper-delete", 0.98, 0.5, 0.2, queries=6),
        row("n", "seed-only", 0.985, float("nan"), 0.2, queries=6),
        row("o", "random-delete", 0.95, float("nan"), float("nan"))])
    verdicts = pd.DataFrame([
        {"dataset": "d", "model": "m", "lowest": "casper-delete", "mean": 0.61,
         "runner_up": "latest-random-delete", "p": 0.0004, "decided": True, "compared": 2},
        {"dataset": "d", "model": "n", "lowest": "casper-delete", "mean": 0.98,
         "runner_up": "random-delete", "p": 0.2, "decided": False, "compared": 1}])
    m, n, o = story(frame, verdicts)  # one line per model, the floors in it
    assert m == ("m on d: casper-delete is the most destabilising (RBO 0.6100, p = 0.0004 "
                 "against latest-random-delete); seed-only floor at RBO 0.6940: casper-delete "
                 "more destabilising, 1 less, 1 not told apart (of 3); rerun floor at RBO "
                 "1.0000: all 3 perturbations are more destabilising.")
    assert n == ("n on d: undecided (lowest: casper-delete, RBO 0.9800, not told apart from "
                 "random-delete, p = 0.200); seed-only floor at RBO 0.9850: neither "
                 "perturbation is told apart from it; only 6 test queries: too few to trust "
                 "these intervals and p-values.")
    assert o == ("o on d: random-delete left RBO 0.9500; no noise floor measured (add -p "
                 "seed-only to learn what another training seed alone changes).")


def test_run_output_option_overrides_the_configs_store(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.format(out=tmp_path / "in-config.duckdb"))
    other = tmp_path / "elsewhere.duckdb"
    assert main(["run", str(cfg), "-o", str(other)]) == 0
    assert f"results: {other}" in capsys.readouterr().out
    assert other.exists() and not (tmp_path / "in-config.duckdb").exists()
