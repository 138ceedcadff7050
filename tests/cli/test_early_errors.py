"""Mistakes found before the first fit, through the ``recaudit`` entry point: exit 2, one
line, nothing trained or written."""

from recaudit.cli import main


def test_k_beyond_the_catalogue_fails_before_training(tmp_path, capsys):
    out = tmp_path / "a.duckdb"
    assert main(["audit", "--dataset", "synthetic", "--model", "gru4rec", "--seeds", "1",
                 "--k", "5000", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "k = 5000 exceeds the 300 items" in err
    assert err.startswith("error: --k 5000: ") and "metrics.k" not in err  # the flag, not a key
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
    base = ["audit", "--dataset", "synthetic", "--sample-users", "100", "--seeds", "1",
            "-p", "seed-only",
            "--param", "epochs=1", "--param", "embedding_dim=8", "--param", "hidden_dim=8"]
    assert main(base + ["--model", "gru4rec"]) == 0
    first = capsys.readouterr().out
    assert main(base + ["--model", "lstm"]) == 0
    second = capsys.readouterr().out
    stores = sorted((tmp_path / "results").glob("audit-*.duckdb"))
    assert len(stores) == 2
    assert "gru4rec" in first and "gru4rec" not in second   # the lstm reading only
    assert main(["status", str(stores[0])]) == 0
    # status wraps at 80 columns, where its "started 3 s ago" decides the breaks: a loaded
    # machine's "started 12 s ago" put one between "1" and "trials"
    assert "1 of its 1 trials done" in " ".join(capsys.readouterr().out.split())
    assert main(base + ["--model", "gru4rec", "-p", "random-delete"]) == 0  # extends its own
    assert len(list((tmp_path / "results").glob("audit-*.duckdb"))) == 2


def test_own_file_options_and_the_filter_is_said(tmp_path, capsys):
    rows = ["userId;movieId;timestamp"]
    for u in range(40):
        for j in range(3 if u < 10 else 15):
            rows.append(f"{u};{(u * 7 + j * 3) % 50};{1000 + 100 * u + j}")
    path = tmp_path / "mine.txt"
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "m.duckdb"
    args = ["audit", "--dataset", str(path), "--seeds", "1", "-p", "seed-only", "--param",
            "epochs=1", "--param", "embedding_dim=8", "--param", "hidden_dim=8",
            "--output", str(out)]
    assert main(args + ["--sep", ","]) == 2
    err = capsys.readouterr().err
    assert "--sep ';'" in err and "[[datasets]]" in err          # CLI and TOML forms
    assert main(args + ["--sep", ";"]) == 2
    assert "--column user=userId" in capsys.readouterr().err
    assert main(args + ["--sep", ";", "--column", "user=userId", "--column",
                        "item=movieId"]) == 0
    err = capsys.readouterr().err
    assert "dropping users with fewer than 10 interactions kept 450 of 480" in err
    # the file filtered another way is another audit: refused in this store (one audit a
    # store), run in a store of its own
    refilter = ["--sep", ";", "--column", "user=userId", "--column", "item=movieId",
                "--min-interactions", "2"]
    assert main(args + refilter) == 2
    assert "filtered or sampled otherwise" in capsys.readouterr().err
    other = [a if a != str(out) else str(tmp_path / "m2.duckdb") for a in args]
    assert main(other + refilter) == 0
    assert "dropping users" not in capsys.readouterr().err
    from recaudit.audit import summary

    assert len(summary(out)) == 1 and len(summary(tmp_path / "m2.duckdb")) == 1
    assert main(args + ["--column", "person=userId"]) == 2
    assert "ROLE=NAME with ROLE one of user, item" in capsys.readouterr().err
