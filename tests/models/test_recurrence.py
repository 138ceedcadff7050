"""Recurrent layers of a stack: "batched" (every member at once, step by step) against the
fused kernels ("native"), and a member's numbers against its neighbours'."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recaudit.errors import ConfigError
from recaudit.models import create
from recaudit.models.sequential._nn import deterministic_torch
from recaudit.models.sequential._stack import Members, Recurrent, resolve_recurrence


def _layer(mode, k, recurrence, layers=2, bias=True, seed=0):
    rnn = Recurrent(mode, k, 6, 5, num_layers=layers, bias=bias, recurrence=recurrence,
                    device="cpu")
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in rnn.parameters():
            p.copy_(torch.rand(p.shape, generator=g) - 0.5)
    return rnn


def _run(rnn, x):
    """Outputs and the gradient of every parameter and of the input (one thread, as the
    models train by default: sums split over threads depend on the sizes split)."""
    x = x.clone().requires_grad_(True)
    with deterministic_torch(1, torch.device("cpu")):
        out = rnn(x, Members(None, None))
        (out * torch.linspace(-1, 1, out.shape[-1])).sum().backward()
    grads = {n: p.grad.clone() for n, p in rnn.named_parameters()}
    return out.detach(), grads, x.grad


@pytest.mark.parametrize("mode,bias", [("GRU", False), ("GRU", True), ("LSTM", True)])
def test_batched_recurrence_is_the_textbook_cell(mode, bias):
    """Batched and native compute the same GRU/LSTM (to float rounding), values and
    gradients, for each member of a stack."""
    x = torch.rand(3, 4, 7, 6, generator=torch.Generator().manual_seed(1))
    native = _run(_layer(mode, 3, "native", bias=bias), x)
    batched = _run(_layer(mode, 3, "batched", bias=bias), x)
    torch.testing.assert_close(batched[0], native[0], rtol=1e-5, atol=1e-6)
    for name in native[1]:
        torch.testing.assert_close(batched[1][name], native[1][name], rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(batched[2], native[2], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("recurrence", ["native", "batched"])
@pytest.mark.parametrize("mode", ["GRU", "LSTM"])
def test_a_members_numbers_do_not_depend_on_its_neighbours(mode, recurrence):
    """Member 0 of a stack of 1, 2, 5 and 16 (the others random): the same bits, forward and
    backward."""
    x = torch.rand(16, 3, 9, 6, generator=torch.Generator().manual_seed(2))
    alone = _run(_layer(mode, 1, recurrence), x[:1])
    for k in (2, 5, 16):
        rnn = _layer(mode, k, recurrence, seed=k)
        with torch.no_grad():       # member 0 holds the lone layer's parameters
            for (_, p), (_, q) in zip(rnn.named_parameters(),
                                      _layer(mode, 1, recurrence).named_parameters()):
                p[0] = q[0]
        out, grads, gx = _run(rnn, x[:k])
        assert torch.equal(out[:1], alone[0])
        assert all(torch.equal(grads[n][:1], alone[1][n]) for n in grads)
        assert torch.equal(gx[:1], alone[2])


def test_auto_is_native_on_the_cpu_and_batched_on_cuda():
    assert resolve_recurrence("auto", torch.device("cpu")) == "native"
    assert resolve_recurrence("auto", torch.device("cuda", 0)) == "batched"
    assert resolve_recurrence("batched", torch.device("cpu")) == "batched"


def test_the_recurrence_is_a_checked_model_parameter():
    from recaudit.data import synthetic
    from recaudit.models.testing import leave_last_out

    with pytest.raises(ConfigError, match="recurrence"):
        create("gru4rec", recurrence="fast")
    train, queries = leave_last_out(synthetic(seed=3, n_users=30, n_items=40))
    params = dict(epochs=1, embedding_dim=8, hidden_dim=8, batch_size=16)
    scores = {r: create("lstm", recurrence=r, **params).fit(train, seed=0).score(queries)
              for r in ("auto", "native", "batched")}
    assert np.array_equal(scores["auto"], scores["native"])        # auto: native on the CPU
    np.testing.assert_allclose(scores["batched"], scores["native"], rtol=1e-4, atol=1e-5)
