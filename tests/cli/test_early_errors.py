"""Mistakes found before the first fit, through the ``recaudit`` entry point: exit 2, one
line, nothing trained or written."""

from recaudit.cli import main


def test_k_beyond_the_catalogue_fails_before_training(tmp_path, capsys):
    out = tmp_path / "a.duckdb"
    assert main(["audit", "--dataset", "synthetic", "--model", "gru4rec", "--seeds", "1",
                 "--k", "5000", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "k = 5000 exceeds the 300 items" in err
    assert "metrics.k" in err
    assert "choose k <=" in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not out.with_name(out.name + ".baselines").exists()


def test_a_negative_seed_in_a_config_names_its_key(tmp_path, capsys):
    cfg = tmp_path / "a.toml"
    cfg.write_text('seeds = [0, -1]\nperturbations = ["random-delete"]\n'
                   f'output = "{tmp_path / "a.duckdb"}"\n'
                   '[[models]]\nname = "gru4rec"\n[[datasets]]\nname = "synthetic"\n')
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "seeds[1]" in err and "integer >= 0" in err
    assert not (tmp_path / "a.duckdb").exists()


def test_audits_without_output_never_share_a_store(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    base = ["audit", "--dataset", "synthetic", "--seeds", "1", "-p", "seed-only",
            "--param", "epochs=1", "--param", "embedding_dim=8", "--param", "hidden_dim=8"]
    assert main(base + ["--model", "gru4rec"]) == 0
    first = capsys.readouterr().out
    assert main(base + ["--model", "lstm"]) == 0
    second = capsys.readouterr().out
    stores = sorted((tmp_path / "results").glob("audit-*.duckdb"))
    assert len(stores) == 2
    assert "gru4rec" in first and "gru4rec" not in second   # the lstm reading only
    assert main(["status", str(stores[0])]) == 0
    assert "1 trial" in capsys.readouterr().out
    assert main(base + ["--model", "gru4rec", "-p", "random-delete"]) == 0  # extends its own
    assert len(list((tmp_path / "results").glob("audit-*.duckdb"))) == 2
