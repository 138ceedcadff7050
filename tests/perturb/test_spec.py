"""PerturbationSpec names, registry, errors, round trips and determinism."""

import json

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.perturb import EditSpec, available, families, parse
from recaudit.perturb._spec import from_dict
from recaudit.seeds import make_rng

from .conftest import random_log


@pytest.mark.parametrize("name,fields", [
    ("random-delete", dict(kind="edit", selector="random", edit="delete", count=1)),
    ("earliest-random-delete", dict(selector="earliest-random", edit="delete")),
    ("latest-random-delete", dict(selector="latest-random")),
    ("casper-delete", dict(selector="casper", edit="delete")),
    ("casper-replace-popular", dict(selector="casper", edit="replace", strategy="popular")),
    ("random-insert-unpopular", dict(selector="random", edit="insert", strategy="unpopular")),
    ("rev-adv-earliest-replace", dict(selector="rev-adv-earliest", strategy="random")),
    ("casper-delete-k4", dict(selector="casper", count=4)),
    ("remove-beginning-5", dict(kind="position", where="beginning", n=5)),
    ("remove-middle-3", dict(kind="position", where="middle", n=3)),
    ("remove-end-10", dict(kind="position", where="end", n=10)),
    ("seed-only", dict(kind="seed-only")),
    ("none", dict(kind="none")),
])
def test_parse(name, fields):
    spec = parse(name)
    for key, value in fields.items():
        assert getattr(spec, key) == value
    assert parse(spec.name) == spec
    assert from_dict(spec.to_dict()) == spec


def test_every_registered_name_parses():
    builtin = families()[""].examples()
    # rerun, seed-only, none; 3 positions; 3 retrains (days, a share, warm); 7 x 9 edits
    assert len(builtin) == 3 + 3 + 3 + 7 * 9
    assert set(builtin) <= set(available())
    for name in builtin:
        spec = parse(name.replace("<n>", "2"))
        assert parse(spec.name) == spec and parse(spec.to_dict()) == spec
        # the canonical name spells the strategy out (insert/replace default to random)
        assert spec.name in (name.replace("<n>", "2"), name + "-random")
    for name in available():  # every family's examples, whatever is registered
        spec = parse(name.replace("<n>", "2"))
        assert parse(spec.name) == spec and parse(spec.to_dict()) == spec


@pytest.mark.parametrize("bad,close", [("casper-delet", "casper-delete"),
                                       ("random-delete-popular", "random-delete"),
                                       ("remove-middel-3", "remove-middle-<n>"),
                                       ("remove-end-0", None), ("casper-delete-k0", None)])
def test_unknown_names(bad, close):
    with pytest.raises(ConfigError, match="unknown perturbation") as err:
        parse(bad)
    if close:
        assert repr(close) in str(err.value)


def test_overrides_and_bad_fields():
    assert parse("casper-delete", max_len=50).max_len == 50
    assert parse("tracin-delete", checkpoint_every=10).needs.model_params == \
        {"checkpoint_every": 10}
    assert parse("tracin-delete").needs.model_params == {"checkpoint_every": 1}
    with pytest.raises(ConfigError, match="checkpoint_every.*integer >= 1"):
        parse("tracin-delete", checkpoint_every=0)
    with pytest.raises(ConfigError, match="TracIn's checkpoint interval"):
        parse("casper-delete", checkpoint_every=10)
    with pytest.raises(ConfigError, match="max_len"):
        parse("casper-delete", max_len=0)
    with pytest.raises(ConfigError, match="Did you mean 'max_len'"):
        EditSpec.from_dict({"kind": "edit", "selector": "casper", "edit": "delete",
                            "max_lne": 3})
    with pytest.raises(ConfigError, match="selector"):
        EditSpec(selector="best", edit="delete")  # type: ignore[arg-type]


FAST = [n.replace("<n>", "2") for n in families()[""].examples()
        if not n.startswith(("tracin", "rev-adv"))] + ["rev-adv-random-insert-popular"]


@pytest.mark.parametrize("name", FAST)
def test_apply_is_seeded_and_replayable(name):
    log = random_log(np.random.default_rng(4), 200, 12, 10, 50, rating=True)
    spec = parse(name)
    if spec.kind == "retrain":   # times in hours: a 2-day window takes part of the 50 h
        log = log.replace(timestamp=log.timestamp * 3600)
    out1, rec1 = spec.apply(log, make_rng(1, name))
    out2, rec2 = spec.apply(log, make_rng(1, name))
    assert out1.fingerprint() == out2.fingerprint() and rec1 == rec2
    again = type(rec1).from_dict(json.loads(json.dumps(rec1.to_dict())))
    assert again == rec1 and again.apply(log).fingerprint() == out1.fingerprint()
    assert np.all(np.diff(out1.timestamp) >= 0)
    if spec.kind == "edit":
        delta = {"delete": -1, "insert": 1, "replace": 0}[spec.edit]
        assert len(out1) == len(log) + delta and rec1.params["spec"] == spec.name


def test_record_refuses_other_log():
    log = random_log(np.random.default_rng(4), 50, 5, 5, 20)
    other = random_log(np.random.default_rng(5), 50, 5, 5, 20)
    _, rec = parse("random-delete").apply(log, make_rng(0))
    with pytest.raises(Exception, match="different log"):
        rec.apply(other)
