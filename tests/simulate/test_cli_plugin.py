"""``recaudit simulate mirror`` and plugging a user-supplied click model into a slate scenario."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.seeds import make_rng
from recaudit.simulate import (CallableActionModel, DocumentSet, GreedySlateOracle,
                               RandomSampler, SlateScenario, UnbiasedSlateOracle, collect_slates,
                               draw_sessions, evaluate_slates)


def test_parse_mixes_and_seeds():
    from recaudit.cli._simulate import parse_mixes, parse_seeds
    from recaudit.errors import ConfigError

    assert parse_mixes("0,0.2,...,1") == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert parse_mixes("0, 0.5,1") == (0.0, 0.5, 1.0)
    assert parse_mixes("0,0.3,...,1") == (0.0, 0.3, 0.6, 0.9, 1.0)
    assert parse_seeds("3") == (0, 1, 2) and parse_seeds("4,7") == (4, 7)
    for bad in ("a,b", "0,...,1", "1,0.5,...,0"):
        with pytest.raises(ConfigError, match="--mix"):
            parse_mixes(bad)
    with pytest.raises(ConfigError, match="--seeds"):
        parse_seeds("0")


def test_cli_writes_duckdb_and_figure(tmp_path):
    import duckdb

    from recaudit.cli import main

    db, fig = tmp_path / "r.duckdb", tmp_path / "f.png"
    args = ["simulate", "mirror", "--scenario", "decoy-slate", "--mix", "0,1", "--seeds", "1",
            "--n-train", "60", "--n-eval", "20", "--epochs", "1", "--output", str(db),
            "--figure", str(fig)]
    assert main(args) == 0
    assert main(args) == 0  # a rerun replaces its rows instead of duplicating them
    con = duckdb.connect(str(db))
    n, algos = con.execute("SELECT count(*), count(DISTINCT algorithm) FROM mirror_results"
                           ).fetchone()
    assert algos == 4  # DeepFM, SetRank and the two oracles
    assert n == 2 * 2 * 5 + 2 * 3  # algos x mixes x 5 metrics + oracles x 3 metrics
    ms = con.execute("SELECT value FROM mirror_results WHERE algorithm = 'Unbiased Oracle' "
                      "AND metric = 'mani_score'").fetchone()[0]
    assert ms == 1.0
    assert fig.stat().st_size > 1000


def test_cli_sequential_with_per_round_rows(tmp_path):
    import duckdb

    from recaudit.cli import main

    db, fig = tmp_path / "s.duckdb", tmp_path / "s.png"
    assert main(["simulate", "mirror", "--scenario", "topic-sequential", "--mix", "0.5",
                 "--seeds", "1", "--n-train", "10", "--n-eval", "10", "--epochs", "2",
                 "--patience", "1", "--algorithms", "DNN", "--rbo-p", "0.8", "--output", str(db),
                 "--figure", str(fig)]) == 0
    con = duckdb.connect(str(db))
    rounds = con.execute("SELECT count(DISTINCT round) FROM mirror_results WHERE metric = 'ps' "
                         "AND round IS NOT NULL AND algorithm = 'DNN'").fetchone()[0]
    assert rounds == 20
    assert fig.stat().st_size > 1000


def test_cli_rejects_bad_options(capsys):
    from recaudit.cli import main

    assert main(["simulate", "mirror", "--scenario", "nope"]) == 2
    assert "scenario" in capsys.readouterr().err
    assert main(["simulate", "mirror", "--rbo-variant", "avg"]) == 2
    assert "error: --rbo-variant: " in capsys.readouterr().err  # the flag, not the key
    assert main(["simulate", "mirror", "--scenario", "decoy-slate", "--patience", "3"]) == 2
    assert "sequential scenario" in capsys.readouterr().err


def _plugin_scenario(action_model):
    rng = np.random.default_rng(0)
    docs = DocumentSet(rng.random((8, 3)), (np.arange(8),), np.ones(3, bool))
    return SlateScenario("plugin", docs, users=rng.random((5, 3)),
                         user_queries=tuple(np.array([0]) for _ in range(5)),
                         action_model=action_model, sampler=RandomSampler(4), slate_size=3)


def _click_model(u, d, D):
    """Attractiveness sigmoid(u.d) times a cascade-like position discount."""
    rank = int(np.flatnonzero((D == d).all(axis=1))[0])
    return float(1 / (1 + np.exp(-(u @ d) + 1.0))) * 0.7 ** rank


def test_plugged_python_click_model_runs_all_stages():
    scen = _plugin_scenario(_click_model)
    phi = scen.initial_preferences()
    u, d = 2, 5
    assert phi[u, d] == pytest.approx(_click_model(scen.users[u], scen.documents.features[d],
                                                   scen.documents.features[[d]]))
    log = collect_slates(scen, [UnbiasedSlateOracle(), GreedySlateOracle()], 0.5, 100,
                         make_rng(1))
    assert log.slates.shape == (100, 3) and log.strategy.sum() == 50
    sessions = draw_sessions(scen, 40, make_rng(2))
    gre = evaluate_slates(scen, GreedySlateOracle(), sessions, make_rng(3))
    unb = evaluate_slates(scen, UnbiasedSlateOracle(), sessions, make_rng(3))
    assert gre["ctr"] >= unb["ctr"] and unb["mani_score"] == 1.0
    # the greedy slate really is the best of every ordered 3-subset of the recall
    import itertools

    u0, c0 = sessions[0][0], sessions[2][0]
    best = max(scen.click_probabilities(u0, p).sum() for p in itertools.permutations(c0, 3))
    assert scen.click_probabilities(u0, gre["slates"][0]).sum() == pytest.approx(best)


def test_plugged_torch_module_and_bad_models():
    import torch

    class Tiny(torch.nn.Module):
        def forward(self, u, d, D):
            return torch.sigmoid((u * d).sum()) * 0.5

    scen = _plugin_scenario(Tiny())
    p = scen.click_probabilities(0, [1, 2, 3])
    want = 0.5 / (1 + np.exp(-(scen.users[0] * scen.documents.features[[1, 2, 3]]).sum(1)))
    np.testing.assert_allclose(p, want, rtol=1e-6)
    bad = CallableActionModel(lambda u, d, D: 1.5)
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        bad.click_probabilities(np.ones(3), np.ones((2, 3)))
    with pytest.raises(TypeError, match="callable"):
        CallableActionModel(3)


def test_core_package_works_without_gymnasium():
    import subprocess
    import sys

    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import recaudit.simulate as s\n"
            "assert s.mani_score(0.2, 0.5, 0.2, 0.5) == 1.0\n"
            "try:\n    import recaudit.simulate.env\nexcept ImportError as e:\n"
            "    assert 'recaudit[simulate]' in str(e)\nelse:\n    raise SystemExit(1)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_samplers_and_document_set_validation():
    from recaudit.simulate import CTRWeightedSampler

    docs = np.arange(6)
    s = CTRWeightedSampler(size=1, n_docs=6, prior=1.0)
    s.observe([0] * 50 + [1] * 50, [1.0] * 50 + [0.0] * 50)  # doc 0 always clicked, doc 1 never
    rng = make_rng(0, "sampler")
    counts = np.bincount([s.recall(docs, rng)[0] for _ in range(3000)], minlength=6)
    w = np.array([51 / 52, 1 / 52, 0.5, 0.5, 0.5, 0.5])
    np.testing.assert_allclose(counts / 3000, w / w.sum(), atol=0.03)
    r = RandomSampler(4).recall(docs, rng)
    assert len(set(r.tolist())) == 4
    with pytest.raises(ValueError, match="recall 7"):
        RandomSampler(7).recall(docs, rng)
    with pytest.raises(ValueError, match="query 0"):
        DocumentSet(np.ones((3, 2)), (np.array([0, 5]),), np.ones(2, bool))
    with pytest.raises(ValueError, match="observable"):
        DocumentSet(np.ones((3, 2)), (np.array([0]),), np.ones(3, bool))
