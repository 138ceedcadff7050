"""Stacked training: a model trained in a stack ends bit for bit as if trained alone.

Each stack holds three members of one configuration with different training logs (one
interaction deleted, one user's history removed so that member has fewer mini-batches, an item
replaced) and different seeds; every member's scores, loss history, checkpoints and TracIn
factors must equal those of the same model fitted alone.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recaudit.data import synthetic
from recaudit.models import create
from recaudit.models.sequential import fit_stack
from recaudit.models.testing import leave_last_out

TINY = dict(epochs=3, embedding_dim=16, batch_size=16)
CONFIGS = {
    "gru4rec": dict(TINY, hidden_dim=16, layers=2),
    "gru4rec-prefix-temporal": dict(TINY, hidden_dim=16, samples="prefix",  # 32 batches
                                    batch_order="temporal", batch_size=48),
    "lstm": dict(TINY, hidden_dim=16, checkpoint_every=1),
    "lstm-casper": dict(TINY, hidden_dim=16, samples="prefix", pad_left=True,
                        first_samples=True, freeze_embedding=True, init="torch", max_len=8),
    "sasrec": dict(TINY, heads=2),
    "sasrec-prefix-patience": dict(TINY, epochs=4, samples="prefix", patience=1,  # members stop
                                   batch_size=32),                   # after 2, 2 and 4 epochs
    "tisasrec": dict(TINY, time_span=16, checkpoint_every=1),
    "bert4rec": dict(TINY, max_len=10, layers=1),
    "latentcross": dict(TINY, hidden_dim=16),
    # the GPU's recurrence on the CPU: every member's GRU/LSTM steps as batched products
    "gru4rec-batched": dict(TINY, hidden_dim=16, layers=2, recurrence="batched"),
    "lstm-batched": dict(TINY, hidden_dim=16, recurrence="batched", checkpoint_every=1),
    "latentcross-batched": dict(TINY, hidden_dim=16, recurrence="batched"),
    "latentcross-history": dict(TINY, hidden_dim=16, samples="history", patience=1, epochs=3),
    "latentcross-history-batched": dict(TINY, hidden_dim=16, samples="history", patience=1,
                                        recurrence="batched", checkpoint_every=1),
    "jodie": dict(TINY, checkpoint_every=1),
}


def _model(key: str):
    return create(key.split("-")[0], **CONFIGS[key])


def _logs():
    log = synthetic(seed=5, n_users=40, n_items=50)
    train, queries = leave_last_out(log)
    rows = np.arange(len(train))
    minus_one = train.take(np.delete(rows, 17))
    busiest = np.bincount(train.user).argmax()
    minus_user = train.take(rows[train.user != busiest])
    return [train, minus_one, minus_user], queries


def _state(model, train, queries) -> dict:
    out = {"scores": model.score(queries),
           "loss": [r["loss"] for r in model.history_],
           "valid": [r.get("valid_mrr") for r in model.history_],
           "checkpoints": [{k: v.clone() for k, v in s.items()} for _, s in model.checkpoints_]}
    if model.checkpoints_:
        rows = np.arange(0, len(train), 5)
        out["factors"] = [np.asarray(a) for _, tr, te, _ in model.checkpoint_factors(
            train, rows, queries) for a in (*tr, *te)]
    return out


def _assert_same(alone: dict, stacked: dict, what: str) -> None:
    assert np.array_equal(alone["scores"], stacked["scores"]), f"{what}: scores differ"
    assert alone["loss"] == stacked["loss"], f"{what}: losses differ"
    assert alone["valid"] == stacked["valid"], f"{what}: validation differs"
    assert len(alone["checkpoints"]) == len(stacked["checkpoints"])
    for a, b in zip(alone["checkpoints"], stacked["checkpoints"], strict=True):
        assert all(torch.equal(a[k], b[k]) for k in a), f"{what}: checkpoint differs"
    for a, b in zip(alone.get("factors", []), stacked.get("factors", []), strict=True):
        assert np.array_equal(a, b), f"{what}: TracIn factors differ"


#: the models whose stack runs as one batched computation (the others step member by member)
BATCHED = {"gru4rec", "lstm", "sasrec", "tisasrec", "bert4rec", "latentcross"}


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_a_stacked_member_equals_the_model_alone(key, monkeypatch):
    logs, queries = _logs()
    seeds = [3, 3, 4]
    alone = [_state(_model(key).fit(t, seed=s), t, queries) for t, s in zip(logs, seeds)]
    calls = []
    cls = type(_model(key))
    batched = cls._objectives
    monkeypatch.setattr(cls, "_objectives", lambda self, net, batch, m, rngs: calls.append(
        len(rngs)) or batched(self, net, batch, m, rngs))
    history = "history" in key
    if history:      # whole histories: a step's groups of every member as one pass
        from recaudit.models.sequential._latentcross import _histories as hist

        real = hist.losses
        monkeypatch.setattr(hist, "losses", lambda net, p, *a: calls.append(len(p.members))
                            or real(net, p, *a))
    members = fit_stack([_model(key) for _ in logs], logs, seeds)
    assert bool(calls) == (key.split("-")[0] in BATCHED)
    assert any(n >= 2 for n in calls) == bool(calls)  # passes over several members
    for i, (m, t) in enumerate(zip(members, logs)):
        _assert_same(alone[i], _state(m, t, queries), f"{key} member {i}")
    assert not np.array_equal(alone[0]["scores"], alone[2]["scores"])  # the members differ


def test_stack_members_of_different_sizes_give_the_same_member():
    """The same trial in a stack of 1 and of 3 (and in another position) trains the same."""
    logs, queries = _logs()
    key = "sasrec"
    one = fit_stack([_model(key)], [logs[1]], [3])[0]
    three = fit_stack([_model(key) for _ in range(3)], [logs[2], logs[1], logs[0]], [4, 3, 3])
    assert np.array_equal(one.score(queries), three[1].score(queries))


@pytest.mark.parametrize("key", ["sasrec", "tisasrec", "bert4rec"])
def test_a_member_of_sixteen_equals_the_model_alone(key, monkeypatch):
    """Neighbour independence at K = 16, audit-like (each log one interaction short, one seed
    and two others mixed in): members 0, 9 and 15 train as the same trials alone, also at
    steps where the stack's members are scored in several groups (BERT4Rec's Cloze counts
    straddle a multiple of 64 with ``mask_prob`` 0.3)."""
    from recaudit.models.sequential import SequentialRecommender

    params = dict(CONFIGS[key], mask_prob=0.3) if key == "bert4rec" else CONFIGS[key]
    sizes: list[int] = []
    scored = SequentialRecommender._scored
    monkeypatch.setattr(SequentialRecommender, "_scored", lambda self, net, trunk, *a: sizes.append(
        trunk.shape[0]) or scored(self, net, trunk, *a))
    log = synthetic(seed=5, n_users=40, n_items=50)
    train, queries = leave_last_out(log)
    rows = np.arange(len(train))
    cut = np.random.default_rng(1).choice(len(train), 16, replace=False)
    logs = [train.take(np.delete(rows, r)) for r in cut]
    seeds = [3] * 16
    seeds[4], seeds[9] = 5, 4
    members = fit_stack([create(key, **params) for _ in logs], logs, seeds)
    assert max(sizes) > 1 and any(1 <= n < 16 for n in sizes)   # groups of several, and fewer
    for i in (0, 9, 15):
        alone = create(key, **params).fit(logs[i], seed=seeds[i])
        assert [r["loss"] for r in alone.history_] == [r["loss"] for r in members[i].history_]
        assert np.array_equal(alone.score(queries), members[i].score(queries)), f"member {i}"
    assert not np.array_equal(members[0].score(queries), members[15].score(queries))


@pytest.mark.parametrize("impl", ["auto", "torch"])
def test_jodie_members_of_stacks_of_1_3_and_16_train_alike(impl, monkeypatch):
    """JODIE's members take their groups together (one recurrence per step for the stack,
    levels of every member batched) and each member trains as it does alone, in a stack of
    3 and of 16, whatever its neighbours: logs one interaction short at various places (their
    groups differ in rows and t-batch levels), one user's history removed (fewer groups), an
    item replaced; the numba recurrence and the torch one (the GPU's, blocks padded)."""
    from recaudit.models.sequential._jodie import _steps

    logs, queries = _logs()
    train = logs[0]
    rows = np.arange(len(train))
    changed = train.item.copy()
    changed[40] = (changed[40] + 1) % train.n_items
    logs = [*logs, *(train.take(np.delete(rows, r)) for r in (0, 3, 31, 60, 99, 150, 201,
                                                               len(train) - 1)),
            train.take(rows[train.user != 7]), train.take(rows[train.user != 11]),
            train.replace(item=changed), train, train]
    seeds = [3, 3, 4, *range(10, 21), 5, 5]   # the last two: one trial twice
    assert len(logs) == len(seeds) == 16

    def model():
        m = create("jodie", epochs=2, embedding_dim=8, batch_size=16, checkpoint_every=1)
        m._rnn_impl = impl
        return m

    calls = []
    real = _steps.cascade
    monkeypatch.setattr(_steps, "cascade", lambda *a: calls.append(1) or real(*a))
    sixteen = fit_stack([model() for _ in logs], logs, seeds)
    steps = 2 * max(len(m.group_ptr_) - 1 for m in sixteen)
    assert len(calls) == steps                     # one recurrence per step for all members
    three = fit_stack([model() for _ in range(3)], [logs[5], logs[0], logs[2]],
                      [seeds[5], seeds[0], seeds[2]])
    for i, j in [(0, 1), (2, 2), (5, 0)]:
        alone = model().fit(logs[i], seed=seeds[i])
        want = _state(alone, logs[i], queries)
        _assert_same(want, _state(sixteen[i], logs[i], queries), f"member {i} of 16")
        _assert_same(want, _state(three[j], logs[i], queries), f"member {i} in 3")
    assert not np.array_equal(sixteen[0].score(queries), sixteen[14].score(queries))
    assert np.array_equal(sixteen[14].score(queries), sixteen[15].score(queries))


class _ProductOperands:
    """Records every matrix product's operands that start off a 64-byte boundary, per batch
    item (a member's block), as ``(op, shape, item, bytes past the boundary)``; a product's
    added term (``baddbmm``'s ``self``) is copied into the output first, so it is not an
    operand."""

    def __init__(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode

        aten = torch.ops.aten
        added = {aten.baddbmm.default, aten.addmm.default}
        products = added | {aten.bmm.default, aten.mm.default}
        outer = self
        self.products, self.off = 0, []

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if func in products:
                    outer.products += 1
                    for t in args[1:3] if func in added else args[:2]:
                        for i in range(t.shape[0]) if t.dim() == 3 else [0]:
                            at = t.data_ptr() + i * t.stride(0) * t.element_size()
                            if t.numel() and at % 64:
                                outer.off.append((func.__name__, tuple(t.shape), i, at % 64))
                return func(*args, **(kwargs or {}))

        self.mode = Mode()


#: the models whose stacks take the members' groups of the log together, unpadded
GROUPED = {
    "jodie": dict(epochs=1, embedding_dim=16, batch_size=24),
    "jodie-torch": dict(epochs=1, embedding_dim=16, batch_size=24),
    "latentcross-history": dict(epochs=1, embedding_dim=16, hidden_dim=16, batch_size=24,
                                samples="history"),
    "latentcross-history-batched": dict(epochs=1, embedding_dim=16, hidden_dim=16,
                                        batch_size=24, samples="history", recurrence="batched"),
}


@pytest.mark.parametrize("key", sorted(GROUPED))
def test_grouped_members_multiply_operands_that_start_where_they_would_alone(key):
    """Issue 61: a matrix product's sums may depend on where its operands start (MKL treats
    the elements before an alignment boundary apart: measured for products of a few rows),
    and a tensor of its own starts on a 64-byte boundary. So every member's block of every
    product operand of a stack's training starts on one too: JODIE pads each member's rows
    of a loss pass to whole lines, LatentCross over whole histories shares a pass only
    between members whose row counts fill whole lines, and JODIE's step plan arrays start on
    lines (groups of 24 rows and uneven last groups here put members off them before).
    Embedding dimensions of 16: a member's parameters then start on lines too."""
    logs, _ = _logs()
    rows = np.arange(len(logs[0]))
    logs = [logs[0].take(np.delete(rows, r)) for r in (3, 31, 99)]

    def model():
        m = create(key.split("-")[0], **GROUPED[key])
        if key == "jodie-torch":
            m._rnn_impl = "torch"
        return m

    seen = _ProductOperands()
    with seen.mode:
        fit_stack([model() for _ in logs], logs, [1, 2, 3])
    assert seen.products > 100 and not seen.off, seen.off[:5]


def test_members_of_different_catalogues_train_in_stacks_of_their_own():
    """One network holds a stack: logs over catalogues of other sizes train apart, each
    member as it trains alone."""
    logs, queries = _logs()
    other, other_q = leave_last_out(synthetic(seed=6, n_users=30, n_items=45))
    key = "gru4rec"
    trains, qs = [logs[0], other, logs[1]], [queries, other_q, queries]
    members = fit_stack([_model(key) for _ in trains], trains, [3, 3, 4])
    for m, t, q, s in zip(members, trains, qs, [3, 3, 4]):
        assert m.network.size == 1
        assert np.array_equal(m.score(q), _model(key).fit(t, seed=s).score(q))


def test_fit_stack_checks_its_members():
    logs, _ = _logs()
    with pytest.raises(ValueError, match="one class and configuration"):
        fit_stack([create("gru4rec", epochs=1), create("gru4rec", epochs=2)], logs[:2], [0, 0])
    with pytest.raises(ValueError, match="one training log and one seed per model"):
        fit_stack([create("gru4rec", epochs=1)], logs[:2], [0])
    m = create("gru4rec", epochs=1)
    with pytest.raises(ValueError, match="same model object twice"):
        fit_stack([m, m], logs[:2], [0, 0])
    with pytest.raises(TypeError, match="sequential models"):
        fit_stack([create("item-item")], logs[:1], [0])
    assert fit_stack([], [], []) == []


def test_a_stack_too_large_for_the_memory_is_split_with_a_warning():
    from recaudit.errors import RecauditWarning

    logs, queries = _logs()
    key = "gru4rec"
    alone = [_model(key).fit(t, seed=3).score(queries) for t in logs]
    need = _model(key)._course(logs[0], 3, torch.device("cpu")).training_bytes()
    assert need > 4 * sum(p.numel() for p in _model(key).fit(logs[0], seed=3).network.parameters())
    with pytest.warns(RecauditWarning, match=r"stack of 3 gru4rec models needs .* stacks of at "
                                             r"most 2"):
        members = fit_stack([_model(key) for _ in logs], logs, [3, 3, 3],
                            memory=int(2.6 * need / 0.8))
    for a, m in zip(alone, members):
        assert np.array_equal(a, m.score(queries))


def test_a_stack_out_of_gpu_memory_is_trained_again_in_halves(monkeypatch):
    """Simulated: the loop raises CUDA's out-of-memory error for stacks of more than one."""
    from recaudit.errors import RecauditError, RecauditWarning
    from recaudit.models.sequential import _train

    logs, queries = _logs()
    key = "lstm"
    alone = [_model(key).fit(t, seed=3).score(queries) for t in logs]
    real = _train.train

    def small_only(courses):
        if len(courses) > 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        real(courses)

    monkeypatch.setattr(_train, "train", small_only)
    with pytest.warns(RecauditWarning, match="ran out of memory"):
        members = fit_stack([_model(key) for _ in logs], logs, [3, 3, 3], memory=2**40)
    for a, m in zip(alone, members):
        assert np.array_equal(a, m.score(queries))

    def never(courses):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(_train, "train", never)
    with pytest.raises(RecauditError, match="out of memory on cpu training one lstm model"):
        fit_stack([_model(key)], logs[:1], [3])
