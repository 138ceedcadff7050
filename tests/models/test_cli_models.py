"""``recaudit models list``."""

from recaudit.cli import main
from recaudit.cli._models import model_parameters


def test_models_list_shows_every_sequential_model_with_defaults(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "jodie", "latentcross"):
        assert name in out
    assert "time_span=256" in out and "mask_prob=0.2" in out


def test_model_parameters_from_config():
    params = dict(model_parameters("tisasrec"))
    assert params["epochs"] == "50" and params["lr"] == "0.001" and params["max_len"] == "50"
    assert params["batch_order"] == "'shuffled'"


def test_unknown_model_suggests(capsys):
    assert main(["models", "list", "grurec"]) == 2
    assert "gru4rec" in capsys.readouterr().err
