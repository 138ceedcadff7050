import pytest

from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, load_config
from recaudit.errors import ConfigError

GOOD = """
name = "t"
output = "x.duckdb"
seeds = [0, 1]
perturbations = ["random-delete"]

[[datasets]]
name = "synthetic"
options = { n_users = 50 }

[[models]]
name = "gru4rec"
params = { epochs = 2 }

[metrics]
k = 5

[executor]
kind = "process"
workers = 2
"""


def test_good_config_round_trips(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text(GOOD)
    cfg = load_config(path)
    assert cfg.seeds == (0, 1) and cfg.metrics.k == 5 and cfg.executor.workers == 2
    assert cfg.models[0].params == {"epochs": 2}
    again = AuditConfig.from_dict(cfg.to_dict())
    assert again == cfg and again.to_dict() == cfg.to_dict()
    assert len(cfg.trials()) == 2


@pytest.mark.parametrize("bad, key, line, hint", [
    (GOOD.replace("workers = 2", "workrs = 2"), "executor.workrs", 20, "workers"),
    (GOOD.replace("k = 5", "k = \"five\""), "metrics.k", 16, "expected an integer"),
    (GOOD.replace("k = 5", "k = 0"), "metrics.k", 16, ">= 1"),
    (GOOD.replace('name = "t"', 'nam = "t"'), "nam", 2, "name"),
    (GOOD.replace("kind = \"process\"", "kind = \"threads\""), "executor.kind", 19, "inprocess"),
])
def test_errors_name_key_file_line_and_closest_key(tmp_path, bad, key, line, hint):
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert str(path) in msg and f"line {line}" in msg and repr(key) in msg and hint in msg


def test_invalid_toml_and_missing_models(tmp_path):
    path = tmp_path / "x.toml"
    path.write_text("seeds = [0,\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="models"):
        AuditConfig.from_dict({"seeds": [0]})


def test_python_spec_trial_ids_depend_on_spec_and_data():
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 1}),),
                      perturbations=("random-delete", "none"), seeds=(0, 1))
    trials = cfg.trials()
    ids = {t.trial_id("fp") for t in trials}
    assert len(ids) == 4
    assert trials[0].trial_id("fp") != trials[0].trial_id("other-fp")
    # the two perturbations of one seed share the baseline
    assert trials[0].baseline_key("fp") == trials[1].baseline_key("fp")
    assert trials[0].baseline_key("fp") != trials[2].baseline_key("fp")


def test_spec_validation():
    with pytest.raises(ConfigError):
        AuditConfig(models=())
    with pytest.raises(ConfigError):
        AuditConfig(models=(ModelSpec("x"),), seeds=(1, 1))
    with pytest.raises(ConfigError):
        DatasetSpec(min_user_interactions=-1)


@pytest.mark.parametrize("name", ["oh2022_table3.toml", "oh2022_table3_jodie.toml",
                                  "betello2023_table3.toml", "quick.toml",
                                  "stabilise_wikipedia.toml"])
def test_example_configs_are_valid(name):
    from pathlib import Path

    from recaudit.audit._study import validate

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / name)
    validate(cfg)  # every model parameter and perturbation name is known
    assert len(cfg.trials()) == (len(cfg.datasets) * len(cfg.models) * len(cfg.seeds)
                                 * len(cfg.perturbations))


def test_stabilise_config_pairs_every_stabilised_model_with_its_plain_model():
    """Issue 17's config: LSTM and SASRec, each plain, with FINEST and as a seed ensemble, so
    the report's Stabilisation section can pair every stabilised trial with a plain twin."""
    from pathlib import Path

    cfg = load_config(Path(__file__).resolve().parents[2] / "configs" / "stabilise_wikipedia.toml")
    plain = [m for m in cfg.models if m.stabilise is None]
    stabilised = [m for m in cfg.models if m.stabilise is not None]
    assert sorted(m.name for m in plain) == ["lstm", "sasrec"]
    assert all(m.base in plain for m in stabilised)
    assert sorted((m.name, m.stabilise["method"]) for m in stabilised) == [
        ("lstm", "ensemble"), ("lstm", "finest"), ("sasrec", "ensemble"), ("sasrec", "finest")]
    assert len({m.label for m in cfg.models}) == len(cfg.models)
    assert {"random-delete", "casper-delete"} <= set(cfg.perturbations)
    assert len(cfg.seeds) == 3


def test_tracin_checkpoints_are_set_in_one_place(tmp_path):
    """A TracIn perturbation's ``checkpoint_every`` serves models whose spec sets none; a
    model that sets another would silently win, so the audit refuses the pair, naming both."""
    tracin = {"name": "tracin-delete", "checkpoint_every": 10}
    cfg = AuditConfig(models=(ModelSpec("jodie"), ModelSpec("lstm", {"checkpoint_every": 10})),
                      perturbations=(tracin, "random-delete"))
    assert cfg.perturbations[0] == tracin
    bad = GOOD.replace('perturbations = ["random-delete"]',
                       'perturbations = [{name = "tracin-delete", checkpoint_every = 10}]'
                       ).replace("params = { epochs = 2 }",
                                 "params = { epochs = 2, checkpoint_every = 5 }")
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    msg = str(err.value)
    assert "perturbations[0].checkpoint_every" in msg and "models[0]" in msg
    assert "every 10 epoch(s)" in msg and "checkpoint_every = 5" in msg


def test_a_perturbation_or_model_given_twice_is_named():
    model = ModelSpec("gru4rec", {"epochs": 1})
    with pytest.raises(ConfigError) as err:  # the same name twice, spelled two ways
        AuditConfig(models=(model,), perturbations=("random-delete", "seed-only",
                                                    "random-delete-k1"))
    assert err.value.key == "perturbations[2]"
    assert "repeats perturbations[0] (random-delete)" in err.value.message
    with pytest.raises(ConfigError) as err:  # a label does not make another model
        AuditConfig(models=(model, ModelSpec("gru4rec", {"epochs": 1}, title="other")))
    assert err.value.key == "models[1]" and "repeats models[0]" in err.value.message
    AuditConfig(models=(model, ModelSpec("gru4rec", {"epochs": 2})))


def test_a_file_dataset_is_labelled_by_its_file_name():
    assert DatasetSpec("plays", path="/data/listening/plays.csv").label == "plays.csv"
    assert DatasetSpec("plays.csv", path="data/plays.csv").label == "plays.csv"
    assert DatasetSpec("ratings", path="data/ml/ratings.tsv").label == "ratings.tsv"
    assert DatasetSpec("my log", path="data/plays.csv").label == "my log"
    assert DatasetSpec("ml-100k").label == "ml-100k"
