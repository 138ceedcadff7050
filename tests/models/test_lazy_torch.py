"""Importing recaudit's packages does not import torch: the sequential models are registered
when first named, and a rating-based audit never loads torch (``recaudit.models._registry``)."""

import importlib
import subprocess
import sys

import pytest

from recaudit.audit._runner import versions
from recaudit.experiment import ModelSpec
from recaudit.models import _registry, available, model_class


def _fresh(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_the_packages_import_without_torch_and_a_model_name_brings_it():
    out = _fresh("import sys, recaudit.models, recaudit.audit, recaudit.report, "
                 "recaudit.properties, recaudit.fuzz, recaudit.reproduce, recaudit.experiment\n"
                 "from recaudit.models import available, create\n"
                 "print('torch' in sys.modules, 'lstm' in available())\n"
                 "create('item-item')\n"
                 "print('torch' in sys.modules)\n"
                 "print(type(create('lstm', epochs=1)).__name__, 'torch' in sys.modules)")
    assert out.split("\n") == ["False True", "False", "LSTM True"]


def test_a_sequential_class_is_reached_as_an_attribute():
    out = _fresh("import sys, recaudit.models as m\n"
                 "print('torch' in sys.modules, m.GRU4Rec.registered_name, "
                 "'torch' in sys.modules)")
    assert out == "False gru4rec True"
    import recaudit.models as m

    with pytest.raises(AttributeError, match="no attribute 'GRU4Rek'"):
        m.GRU4Rek  # noqa: B018 - the attribute access is the test


def test_each_deferred_name_is_registered_by_its_module():
    for name, target in _registry._DEFERRED.items():
        module, _, attr = target.partition(":")
        cls = getattr(importlib.import_module(module), attr)  # registers it
        assert cls.registered_name == name and _registry._REGISTRY[name] is cls
    assert set(_registry._DEFERRED) <= set(available())


def test_a_models_options_are_its_class_config_and_read_without_torch():
    """:func:`config_class` gives each model's ``Config`` (a sequential model's without
    importing the model); a configuration's model spec is checked with it, so naming a
    sequential model and its parameters imports no torch."""
    from recaudit.models import config_class

    assert set(_registry._CONFIGS) <= set(_registry._DEFERRED)
    for name in available():
        assert config_class(name) is model_class(name).Config, name
    assert config_class("lstm@oh2022") is model_class("lstm").Config
    out = _fresh("import sys\n"
                 "from recaudit.experiment import ModelSpec\n"
                 "from recaudit.errors import ConfigError\n"
                 "for name in ('gru4rec', 'sasrec@betello2023', 'jodie'):\n"
                 "    ModelSpec(name, {'epochs': 1})\n"
                 "try:\n"
                 "    ModelSpec('gru4rec', {'hidden_dim': 0})\n"
                 "except ConfigError as exc:\n"
                 "    print(exc.message.split(':')[0])\n"
                 "print('torch' in sys.modules)")
    assert out.split("\n") == ["GRU4RecConfig.hidden_dim = 0", "False"]


def test_a_deferred_name_survives_a_reset_registry(monkeypatch):
    """A registry emptied after the module was imported (as the docs tests restore theirs)
    still finds the built-in class."""
    import recaudit.models.sequential  # noqa: F401 - imported once, before the reset

    monkeypatch.setattr(_registry, "_REGISTRY", {})
    assert model_class("lstm").__name__ == "LSTM" and "lstm" in _registry._REGISTRY


def test_a_trial_records_a_device_only_for_a_model_that_takes_one():
    assert "device" not in versions(ModelSpec("item-item"))
    assert versions(ModelSpec("lstm"))["device"].startswith(("cpu (", "cuda"))
    assert versions(ModelSpec("gru4rec", {"device": "cpu"}))["device"].startswith("cpu (")
    assert versions(ModelSpec("sasrec@betello2023"))["device"].startswith(("cpu (", "cuda"))


def test_training_imports_no_dynamo_and_the_deterministic_flags_are_set_and_restored():
    """Training and ranking switch on torch's deterministic algorithms without importing
    TorchDynamo (``torch.use_deterministic_algorithms`` imports it through the inductor's
    configuration: 1.2 CPU-s in every process that trains); when something else has imported
    the inductor, its ``deterministic`` flag follows the block as the public call sets it."""
    out = _fresh("import sys, torch\n"
                 "from recaudit._torch import deterministic_torch\n"
                 "from recaudit.models import create\n"
                 "from recaudit.models.testing import leave_last_out, planted_log\n"
                 "train, queries = leave_last_out(planted_log())\n"
                 "create('gru4rec', epochs=1, embedding_dim=8, hidden_dim=8)"
                 ".fit(train, seed=0).rank(queries)\n"
                 "print('torch._dynamo' in sys.modules, "
                 "torch.are_deterministic_algorithms_enabled())\n"
                 "import torch._inductor.config as ic\n"
                 "with deterministic_torch(1):\n"
                 "    print(torch.are_deterministic_algorithms_enabled(), ic.deterministic)\n"
                 "print(torch.are_deterministic_algorithms_enabled(), ic.deterministic)\n"
                 "torch.use_deterministic_algorithms(True, warn_only=True)\n"
                 "with deterministic_torch(1):\n"
                 "    print(torch.is_deterministic_algorithms_warn_only_enabled())\n"
                 "print(torch.is_deterministic_algorithms_warn_only_enabled(), ic.deterministic)")
    assert out.split("\n") == ["False False", "True True", "False False", "False",
                               "True True"]
