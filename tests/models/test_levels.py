"""Packed batches of a stack's members as padded levels (``_levels``): the layout, the GRU it
computes against the fused kernel, and a member's bits against its neighbours'."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recaudit.models.sequential._latentcross import _levels
from recaudit.models.sequential._nn import deterministic_torch
from recaudit.models.sequential._stack import Members, Recurrent

H, D, U = 5, 6, 32


def _gru(k: int, seed: int) -> Recurrent:
    rnn = Recurrent("GRU", k, D, H, recurrence="batched", device="cpu")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in rnn.parameters():
            p.copy_(torch.rand(p.shape, generator=g) - 0.5)
    return rnn


def _sizes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Packed batch sizes of random sequences of ``n`` elements in all: ``b_t`` = the number
    of sequences longer than ``t`` (decreasing)."""
    lens: list[int] = []
    while sum(lens) < n:
        lens.append(min(int(rng.integers(1, 9)), n - sum(lens)))
    lens_a = np.array(lens)
    return np.array([(lens_a > t).sum() for t in range(lens_a.max())])


def _run(rnn: Recurrent, sizes: list[np.ndarray], recurrence: str, seed: int = 5):
    """Each element's input state and each sequence's final state, with the gradients of the
    parameters and of the inputs (one thread, as the models train by default)."""
    k, n = len(sizes), int(sizes[0].sum())
    x = torch.rand(k, n, D, generator=torch.Generator().manual_seed(seed)).requires_grad_(True)
    state = torch.rand(k * U, H, generator=torch.Generator().manual_seed(seed + 1))
    rows = [g * U + np.arange(b[0]) for g, b in enumerate(sizes)]
    plan = _levels.plan_packed(sizes, rows, n, torch.device("cpu"), recurrence)
    for p in rnn.parameters():
        p.grad = None
    with deterministic_torch(1, torch.device("cpu")):
        before, finals = _levels.run_packed(rnn, x, state, plan, Members(None, None))
        weight = torch.linspace(-1, 1, H)
        ((before * weight).sum() + (finals * weight.flip(0)).sum()).backward()
    return before.detach(), finals.detach(), \
        {name: p.grad.clone() for name, p in rnn.named_parameters()}, x.grad


def test_the_layout_of_two_members(monkeypatch):
    """Hand-worked: member 0 has sequences of lengths 3, 1 (sizes 2, 1, 1), member 1 of 2, 2
    (sizes 2, 2); levels padded to one row (``LEVEL_ROWS = 1``)."""
    monkeypatch.setattr(_levels, "LEVEL_ROWS", 1)
    plan = _levels.plan_packed([np.array([2, 1, 1]), np.array([2, 2])],
                               [np.array([7, 3]), np.array([12, 17])], 4,
                               torch.device("cpu"), "batched")
    # level widths 2, 2, 1; at level 1 the members' widths differ (1, 2): two groups; at
    # level 2 member 1's levels are over: carried along in member 0's group (all members)
    assert [w for w, _ in plan.levels] == [2, 2, 1]
    assert plan.levels[0][1] == [(None, 2)] and plan.levels[2][1] == [(None, 1)]
    assert [(m.tolist(), w) for m, w in plan.levels[1][1]] == [([0], 1), ([1], 2)]
    # per member: [h0 (2); level 0 (2); level 1 (2); level 2 (1)]: T = 7
    assert plan.h0.tolist() == [7, 3, 12, 17]
    # level rows' packed rows (member 1's at 4 + ..., padding reads the member's row 0)
    assert plan.gather.tolist() == [0, 1, 2, 0, 3, 4, 5, 6, 7, 4]
    # input states: level 0 from h0, level 1 from level 0, level 2 from level 1
    assert plan.before.tolist() == [0, 1, 2, 4, 7 + 0, 7 + 1, 7 + 2, 7 + 3]
    # finals: member 0's sequence 0 at level 2 (row 6), sequence 1 at level 0 (row 3);
    # member 1's at level 1 (rows 4, 5)
    assert plan.finals.tolist() == [6, 3, 7 + 4, 7 + 5] and plan.rows.tolist() == [7, 3, 12, 17]


def test_batched_levels_compute_the_fused_gru():
    """The padded levels compute what the fused kernel computes over the packed batch (to
    float rounding): states, final states and all gradients, for every member."""
    rng = np.random.default_rng(0)
    sizes = [_sizes(rng, 20) for _ in range(3)]
    native = _run(_gru(3, 1), sizes, "native")
    batched = _run(_gru(3, 1), sizes, "batched")
    torch.testing.assert_close(batched[0], native[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(batched[1], native[1], rtol=1e-5, atol=1e-6)
    for name in native[2]:
        torch.testing.assert_close(batched[2][name], native[2][name], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(batched[3], native[3], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("level_rows", [1, 8])
@pytest.mark.parametrize("recurrence", ["native", "batched"])
def test_a_members_numbers_do_not_depend_on_its_neighbours(recurrence, level_rows,
                                                           monkeypatch):
    """Member 0 alone and beside 2 and 15 others with other layouts (levels of one row: the
    members' widths differ at most levels, and they run in groups of equal width): the same
    bits, forward and backward."""
    monkeypatch.setattr(_levels, "LEVEL_ROWS", level_rows)
    rng = np.random.default_rng(3)
    sizes = [_sizes(rng, 24) for _ in range(16)]
    split = _levels.plan_packed(sizes, [g * U + np.arange(b[0]) for g, b in enumerate(sizes)],
                                24, torch.device("cpu"), "batched")
    if level_rows == 1:   # the groups of equal width are exercised
        assert sum(groups[0][0] is not None for _, groups in split.levels) >= 3
    alone = _run(_gru(1, 0), sizes[:1], recurrence)
    for k in (3, 16):
        rnn = _gru(k, k)
        with torch.no_grad():    # member 0 holds the lone layer's parameters
            for p, q in zip(rnn.parameters(), _gru(1, 0).parameters()):
                p[0] = q[0]
        before, finals, grads, gx = _run(rnn, sizes[:k], recurrence)
        assert torch.equal(before[:1], alone[0])
        assert torch.equal(finals[:int(sizes[0][0])], alone[1])
        assert all(torch.equal(grads[n][:1], alone[2][n]) for n in grads)
        assert torch.equal(gx[:1], alone[3])
