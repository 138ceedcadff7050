"""``recaudit models list``."""

from recaudit.cli import main
from recaudit.models import parameters as model_parameters


def test_models_list_shows_every_sequential_model_with_defaults(capsys):
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "jodie", "latentcross"):
        assert name in out
    assert "time_span=256" in out and "mask_prob=0.2" in out


def test_model_parameters_from_config():
    params = {p: (d, doc) for p, d, doc in model_parameters("tisasrec")}
    assert params["epochs"][0] == "50" and params["lr"][0] == "0.001"
    assert params["max_len"][0] == "50" and params["batch_order"][0] == "'shuffled'"
    assert "interval" in params["time_span"][1] and "learning rate" in params["lr"][1]


def test_one_model_lists_parameters_with_their_documentation(capsys):
    assert main(["models", "list", "funksvd"]) == 0
    out = capsys.readouterr().out
    assert "latent factors" in out and "learning rate" in out and "exclude_seen" in out


def test_unknown_model_suggests(capsys):
    assert main(["models", "list", "grurec"]) == 2
    assert "gru4rec" in capsys.readouterr().err
