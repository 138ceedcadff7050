"""Every registered perturbation declares whether it draws from its generator
(``needs.rng``), and the declaration is true: given the same log and context, two generators
give the same edit for one that draws nothing (CASPER, TracIn, position removal, the
references, fuzzing's ZERO), and different edits for one that draws (an audit plans the
repeated draws of the second kind only)."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.audit import AuditConfig, DatasetSpec, ModelSpec, close_context, perturb_context
from recaudit.audit._spec import build_model
from recaudit.experiment import prepare
from recaudit.perturb import available, parse

pytest.importorskip("torch")

DATA = DatasetSpec("synthetic", options={"n_users": 24, "n_items": 20, "n_clusters": 3,
                                         "mean_length": 10, "seed": 5, "ratings": True,
                                         "attributes": True})
MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8,
                              "batch_size": 64})
#: The generators of the draws compared: a drawing perturbation differs between at least one
#: pair (a single pair may coincide by chance on a small log), a fixed one between none.
SEEDS = ((1, 2), (3, 4), (5, 6), (7, 8))


def _names() -> list[str]:
    names = [n.replace("<n>", "2") for n in available()]
    names += ["casper-delete-k3", "random-delete+inputs", "casper-delete+inputs",
              "remove-end-2+inputs", "fuzz:ZERO:2", "fuzz:AMR:0"]
    return list(dict.fromkeys(names))


@pytest.fixture(scope="module")
def setting():
    trial = AuditConfig(datasets=(DATA,), models=(MODEL,), perturbations=("none",),
                        seeds=(1,)).trials()[0]
    _, split = prepare(trial.dataset, trial.split)
    model = build_model(trial.model)
    model.fit(split.train, seed=trial.seed)
    base = model.rank(split.queries, k=None)
    return trial, split, base


def _edit(spec, split, context, seed):
    out, record = spec.perturb(split.train, np.random.default_rng(seed), context)
    return out.fingerprint(), record.to_dict()


@pytest.mark.parametrize("name", _names())
def test_the_declared_randomness_is_the_real_one(name, setting):
    trial, split, base = setting
    spec = parse(name)
    context = perturb_context(spec, trial, split, base)
    try:
        same = [_edit(spec, split, context, a) == _edit(spec, split, context, b)
                for a, b in SEEDS]
    finally:
        close_context(context)
    if spec.needs.rng:
        assert not all(same), f"{name} declares rng=True but every draw gave the same edit"
    else:
        assert all(same), f"{name} declares rng=False but two generators gave two edits"


def test_the_declarations_cover_what_the_names_say():
    fixed = ["casper-delete", "tracin-delete", "casper-replace-popular",
             "tracin-insert-unpopular", "remove-beginning-3", "seed-only", "rerun", "none",
             "fuzz:ZERO:5", "fuzz:ARAND:0"]
    drawn = ["random-delete", "earliest-random-delete", "latest-random-replace-popular",
             "casper-replace-random", "tracin-insert-random", "rev-adv-earliest-delete",
             "rev-adv-random-replace-unpopular", "fuzz:ARAND:5", "fuzz:AMR:1",
             "fuzz:APORTFOLIO:4"]
    assert [parse(n).needs.rng for n in fixed] == [False] * len(fixed)
    assert [parse(n).needs.rng for n in drawn] == [True] * len(drawn)
