"""``recaudit reproduce run --dry-run``: an experiment's audits planned from the configs its own
runner builds, with nothing trained, read or written."""

import pytest

from recaudit.cli import main
from recaudit.errors import ConfigError
from recaudit.reproduce import Scope, _oh2022, get, plan


@pytest.fixture
def no_training(monkeypatch):
    import recaudit.audit

    def refuse(*a, **kw):
        raise AssertionError("planning trained something")

    monkeypatch.setattr(recaudit.audit, "run_audit", refuse)
    monkeypatch.setattr(_oh2022._figures, "_casper_runtime", refuse)


def test_plan_gives_the_runners_own_configs_and_writes_nothing(tmp_path, no_training):
    scope = Scope(seeds=1, draws=1, models=("latentcross", "jodie"))
    configs = plan("oh2022-table3", "paper", tmp_path, workers=2, scope=scope)
    work = tmp_path / "oh2022-table3" / "paper"
    expected = _oh2022._configs(work, "paper", "foursquare", _oh2022.MODELS,
                                _oh2022.LOO + _oh2022.REPLACE, reps=scope)
    assert [c.models for c in configs] == [c.models for c in expected]
    assert [c.perturbations for c in configs] == [c.perturbations for c in expected]
    assert {c.output for c in configs} == {str(tmp_path / "oh2022-foursquare-paper.duckdb")}
    assert all(c.executor.workers == 2 and c.seeds == (0,) for c in configs)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", [e.name for e in _oh2022.EXPERIMENTS]
                         + ["betello2023-table2", "betello2023-removal",
                            "betello2023-removal-inputs"])
def test_every_audit_experiment_is_planned_at_both_scales(tmp_path, no_training, name):
    assert get(name).plannable
    for scale in ("small", "paper"):
        configs = plan(name, scale, tmp_path)
        assert configs and all(c.perturbations for c in configs)
    assert list(tmp_path.iterdir()) == []


def test_experiments_that_are_not_audits_refuse_a_plan(tmp_path):
    with pytest.raises(ConfigError, match="not a stability audit"):
        plan("zhu2023-figure7", "small", tmp_path)
    with pytest.raises(ConfigError, match="no scale"):
        plan("oh2022-table4", "huge", tmp_path)


@pytest.fixture
def small_foursquare(tmp_path_factory, monkeypatch, shared_data):
    """A mirror holding the first 4,000 rows of Foursquare: a calibration on it fits in
    seconds (on the whole file, 4 one-epoch fits of LatentCross took 29 s); the plan's wording
    and what it writes do not depend on the data's size."""
    mirror = tmp_path_factory.mktemp("mirror")
    with open(shared_data / "foursquare.tsv") as full:
        (mirror / "foursquare.tsv").write_text("".join(next(full) for _ in range(4000)))
    monkeypatch.setenv("RECAUDIT_MIRROR", str(mirror))
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path_factory.mktemp("cache")))


def test_cli_dry_run_prints_the_plan_and_trains_nothing(tmp_path, capsys, small_foursquare):
    assert main(["reproduce", "run", "oh2022-table4", "--scale", "small", "--dry-run",
                 "--dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "oh2022-table4" in text and "what the audit would train" in text
    assert "(calibration)" in text and "estimated wall time" in text
    assert list(tmp_path.iterdir()) == []                # no store, no folder
    assert main(["reproduce", "run", "oh2022-table4", "--dry-run", "--no-train",
                 "--dir", str(tmp_path)]) != 0


def test_plan_honours_a_perturbation_scope(tmp_path, no_training):
    scope = Scope(seeds=1, models=("jodie",), perturbations=("casper-delete", "random-delete"))
    configs = plan("oh2022-table3", "paper", tmp_path, scope=scope)
    assert [c.perturbations for c in configs] == [("random-delete", "casper-delete")]
    assert plan("oh2022-table3", "paper", tmp_path,
                scope=Scope(perturbations=("remove-end-1",))) == []   # none of its own


def test_cli_rejects_an_unknown_perturbation_before_anything_runs(tmp_path, capsys):
    code = main(["reproduce", "run", "oh2022-table3", "--scale", "paper", "--perturbations",
                 "casper-delete,randm-delete", "--dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code != 0 and "randm-delete" in err and "random-delete" in err
    assert list(tmp_path.iterdir()) == []


def test_cli_dry_run_says_when_a_scope_leaves_nothing_to_train(tmp_path, capsys, no_training):
    assert main(["reproduce", "run", "oh2022-table4", "--scale", "paper", "--dry-run",
                 "--perturbations", "casper-delete", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "nothing to train" in out and "--perturbations casper-delete" in out
    assert list(tmp_path.iterdir()) == []
