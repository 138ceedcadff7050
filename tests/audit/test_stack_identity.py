"""Issue 61: the audit's own path (``run_audit``, as ``recaudit audit --stack N`` runs it)
gives every sequential model the same per-query numbers, bit for bit, whether its trials are
trained one at a time (``stack = 1``) or three together (``stack = 3``).

The models' own tests compare members of stacks built by hand; this one runs what a user runs:
the audit plans each baseline's perturbed trials into stacks, draws their perturbed logs (one
interaction deleted at a random, the earliest or the latest place, one replaced: their groups
and t-batch levels differ in rows) and trains each stack with ``fit_stack``. Every built-in
sequential model of the registry takes part, so a model added later is checked too.

The stored numbers come from rank lists, which a last-bit difference of a model rarely
reorders on data this small (the issue's 104 of 7,836 queries were on 2,000 users); so the test
also keeps a digest of every model the audit trains (its parameters and learned state, keyed
by its model, parameters, training log and seed) and requires the same bits in both runs.

Whether a misplaced operand changes a product's bits depends on the CPU and its BLAS: on the AMD
EPYC (MKL 2024.2) this was written on, products depend on 16-byte alignment only, which the
code before the fix kept at these widths, and this test passed there before the fix too (it
failed with widths of 10, whose parameters are off lines in any stack: a limit of every model,
see ``_stack.LINE``). ``tests/models/test_stack.py`` checks the layout itself, on any machine.
"""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from recaudit.audit import (AuditConfig, AuditStore, DatasetSpec, ExecutorSpec, MetricSpec,
                            ModelSpec, run_audit)
from recaudit.models import available, config_class

pytestmark = pytest.mark.slow

DATA = DatasetSpec("synthetic", options={"n_users": 30, "n_items": 40, "n_clusters": 4,
                                         "mean_length": 14, "seed": 5})
PERTURBATIONS = ("random-delete", "earliest-random-delete", "latest-random-delete",
                 "seed-only")
TINY = {"epochs": 2, "embedding_dim": 16, "batch_size": 24}
#: each model's small configuration (the others take TINY alone)
PARAMS = {
    "gru4rec": {"hidden_dim": 16},
    "lstm": {"hidden_dim": 16},
    "latentcross": {"hidden_dim": 16, "samples": "history"},
    "sasrec": {"heads": 2},
    "tisasrec": {"time_span": 16},
    "bert4rec": {"max_len": 10, "layers": 1},
    # groups of 24 rows and uneven last groups: the row counts that put a member's part of a
    # loss pass off a 64-byte boundary before the fix
    "jodie": {},
}
#: groups of 3 rows (JODIE, LatentCross over whole histories): a step's groups far shorter than
#: a line of rows, and every group of a member uneven, so that every step pads (JODIE) or
#: splits (LatentCross) its passes
SMALL_GROUPS = (
    ModelSpec("jodie", {**TINY, "batch_size": 3}, title="jodie-groups-of-3"),
    ModelSpec("latentcross", {**TINY, "hidden_dim": 16, "batch_size": 3, "samples": "history"},
              title="latentcross-groups-of-3"))


def _sequential() -> list[str]:
    from recaudit.models.sequential import SequentialConfig

    return [name for name in available()
            if (c := config_class(name)) is not None and issubclass(c, SequentialConfig)]


def _config(path, stack: int) -> AuditConfig:
    models = tuple(ModelSpec(name, {**TINY, **PARAMS.get(name, {})})
                   for name in _sequential()) + SMALL_GROUPS
    return AuditConfig(models=models, seeds=(0,), datasets=(DATA,), perturbations=PERTURBATIONS,
                       metrics=MetricSpec(k=5), executor=ExecutorSpec(stack=stack),
                       output=str(path))


def _digest(model) -> str:
    """SHA-256 of a fitted model's network parameters, its other learned tensors (JODIE's
    dynamic embeddings, ...) and its loss history."""
    import torch

    h = hashlib.sha256()
    for name, value in sorted(model.network_.state_dict().items()):
        h.update(name.encode() + value.detach().cpu().contiguous().numpy().tobytes())
    for name, value in sorted(vars(model).items()):
        if name.endswith("_") and isinstance(value, (torch.Tensor, np.ndarray)):
            array = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
            h.update(name.encode() + np.ascontiguousarray(array).tobytes())
    h.update(json.dumps([r["loss"] for r in model.history_]).encode())
    return h.hexdigest()


def _fits(monkeypatch) -> dict:
    """Every model the training loop finishes, by (model, parameters, log, seed): its digest."""
    from recaudit.models.sequential import _train

    fits: dict = {}
    real = _train.train

    def train(courses):
        real(courses)
        for c in courses:
            key = (c.model.registered_name, json.dumps(c.model.get_params(), sort_keys=True,
                                                       default=str),
                   c.train.fingerprint(), c.seed)
            fits[key] = _digest(c.model)

    monkeypatch.setattr(_train, "train", train)
    return fits


def _read(path) -> tuple[pd.DataFrame, pd.DataFrame]:
    with AuditStore(path, read_only=True) as store:
        trials = store.sql("SELECT trial_id, model_label, perturbation, versions FROM trials "
                           "ORDER BY trial_id")
        queries = store.sql("SELECT * FROM query_results ORDER BY trial_id, query")
    return trials, queries


def test_every_sequential_model_gives_the_same_numbers_in_a_stack_of_three(tmp_path,
                                                                           monkeypatch):
    assert {"bert4rec", "gru4rec", "jodie", "latentcross", "lstm", "sasrec",
            "tisasrec"} <= set(_sequential())
    fits = _fits(monkeypatch)
    t1, q1 = _read(run_audit(_config(tmp_path / "one.duckdb", 1)))
    alone = dict(fits)
    fits.clear()
    t3, q3 = _read(run_audit(_config(tmp_path / "three.duckdb", 3)))
    stacked = dict(fits)
    n_models = len(_sequential()) + len(SMALL_GROUPS)
    assert list(t1.trial_id) == list(t3.trial_id) and len(t1) == n_models * len(PERTURBATIONS)
    # the stacks formed: each model's four perturbed trials of one training seed in a stack
    # of three and one alone; seed-only trains with another seed (a baseline group of its own)
    sizes = [json.loads(v).get("stack") for v in t3.versions]
    assert sizes.count("3") == 3 * n_models
    assert all(json.loads(v).get("stack") is None for v in t1.versions)
    assert list(q1.columns) == list(q3.columns) and len(q1) == len(q3) > 0
    for column in q1.columns:
        a, b = q1[column].to_numpy(), q3[column].to_numpy()
        if a.dtype.kind == "f":   # bit for bit (NaN where either has one)
            same = (a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))
        else:
            same = a == b
        if not same.all():
            bad = q1.loc[~same, "trial_id"].map(dict(zip(t1.trial_id, t1.model_label)))
            raise AssertionError(f"{column}: {int((~same).sum())} of {len(a)} queries differ "
                                 f"between stack 1 and stack 3 ({sorted(set(bad))})")
    # the perturbations change the lists (the comparison is not of identical models)
    assert (q1.rbo < 1).any()
    # every fit of the audit, baselines and perturbed models: the same bits
    assert set(alone) == set(stacked) and len(alone) == n_models * (2 + len(PERTURBATIONS) - 1)
    differ = sorted({key[0] for key in alone if alone[key] != stacked[key]})
    assert not differ, f"models trained otherwise in a stack of three: {differ}"
