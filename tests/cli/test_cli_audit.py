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
    assert "2 trials done of 2 planned" in capsys.readouterr().out
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


def test_story_reads_the_summary_against_the_floors():
    import pandas as pd

    from recaudit.cli._audit import story

    def row(pert, rbo, p_seed, mrr=0.0003):
        r = {"dataset": "d", "model": "m", "perturbation": pert, "rbo": rbo, "jaccard": rbo,
             "mrr_change": mrr, "p_vs_seed_only": p_seed, "identical": 0.0}
        for m in ("rbo", "jaccard", "mrr_change"):
            r[f"{m}_ci_low"], r[f"{m}_ci_high"] = r[m] - 0.01, r[m] + 0.01
        return r

    frame = pd.DataFrame([row("random-delete", 0.912, 1e-6), row("latest-random-delete",
                                                                  0.70, 0.4),
                          row("seed-only", 0.694, float("nan")), row("none", 1.0, 0.0)])
    lines = story(frame)
    assert len(lines) == 2  # the floors have no line of their own
    assert "random-delete left the rank lists at RBO 0.9120 [0.9020, 0.9220]" in lines[0]
    assert "MRR moved by +0.0003 [-0.0097, +0.0103]" in lines[0]
    assert ("another seed alone gives RBO 0.6940 (random-delete is significantly less "
            "destabilising, p = 1e-06)") in lines[0]
    assert "not distinguishable from latest-random-delete, p = 0.400" in lines[1]
    verdicts = pd.DataFrame([{"dataset": "d", "model": "m", "lowest": "latest-random-delete",
                              "runner_up": "random-delete", "p": 0.2, "decided": False,
                              "compared": 1}])
    assert "no perturbation is the most destabilising" in story(frame, verdicts)[-1]


def test_run_output_option_overrides_the_configs_store(tmp_path, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(TINY.format(out=tmp_path / "in-config.duckdb"))
    other = tmp_path / "elsewhere.duckdb"
    assert main(["run", str(cfg), "-o", str(other)]) == 0
    assert f"results: {other}" in capsys.readouterr().out
    assert other.exists() and not (tmp_path / "in-config.duckdb").exists()
