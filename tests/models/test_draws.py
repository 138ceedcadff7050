"""Dropout masks from the counter-based generator: the hash against plain Python, the keep
rate, and a member's mask against its neighbours'."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from recaudit.models.sequential import _draws
from recaudit.models.sequential._stack import Dropout, Members


def _keys(*values):
    return torch.tensor(values, dtype=torch.int32)


@pytest.mark.parametrize("start,shape", [(0, (7,)), (1000, (3, 5)), (2**31 - 40, (33,))])
def test_draws_are_the_hash_written_out_in_plain_python(start, shape):
    keys = [0, 1, -1, 123456789, -2**31, _draws.fold(2**62 + 12345)]
    bits = _draws.member_bits(_keys(*keys), start, shape).view(len(keys), -1)
    for row, key in zip(bits.tolist(), keys):
        assert row == _draws.reference_bits(key, start, int(np.prod(shape)))


def test_the_hash_is_murmur3s_finaliser():
    """fmix32 of known inputs (MurmurHash3's finaliser, computed by hand in Python)."""
    for x, want in [(0, 0), (1, 0x514E28B7), (0xDEADBEEF, 0x0DE5C6A9)]:
        got = int(_draws.fmix32(torch.tensor([x - (1 << 32) if x >= 1 << 31 else x],
                                             dtype=torch.int32))[0]) & 0xFFFFFFFF
        assert got == want


def test_keep_rate_and_scaling():
    drop = Dropout(0.3)
    x = torch.ones(2, 200_000)
    out = drop(x, Members(None, _keys(5, 6)))
    values = sorted(out.unique().tolist())
    assert values[0] == 0.0 and values[1] == pytest.approx(1 / 0.7) and len(values) == 2
    kept = (out > 0).float().mean(1)
    # binomial(200k, 0.7): sd 0.001; 5 sd
    assert torch.all((kept - 0.7).abs() < 0.005)
    # two members' masks agree as independent ones do: p^2 + (1-p)^2 = 0.58
    agree = float(((out[0] > 0) == (out[1] > 0)).float().mean())
    assert abs(agree - 0.58) < 0.005
    drop.eval()
    assert torch.equal(drop(x, Members(None, _keys(5, 6))), x)


def test_a_members_mask_does_not_depend_on_its_neighbours():
    drop = Dropout(0.5)
    alone = Members(None, _keys(42))
    first = drop(torch.ones(1, 300), alone)
    second = drop(torch.ones(1, 20, 3), alone)           # the next layer: the next counters
    assert not torch.equal(first.view(-1)[:60], second.view(-1))
    stack = Members(None, _keys(7, 42, -9))
    three = drop(torch.ones(3, 300), stack)
    assert torch.equal(three[1:2], first) and not torch.equal(three[0:1], first)
    # a sub-group goes on drawing where its pass is
    assert torch.equal(drop(torch.ones(1, 20, 3), stack.sub([1])), second)


def test_a_step_key_is_the_members_key_mixed_with_the_step():
    net = torch.nn.Module()
    net.weight = torch.nn.Parameter(torch.zeros(3, 1))
    net.dropout_keys = _keys(11, -22, 33)
    tag = _draws.step_tag(2, 17)
    m = Members.step(net, [2, 0], tag)
    want = [_draws._fmix_int((k ^ tag) & 0xFFFFFFFF) for k in (33, 11)]
    assert [k & 0xFFFFFFFF for k in m.keys.tolist()] == want
    assert _draws.step_tag(2, 17) != _draws.step_tag(17, 2)
    assert len({_draws.step_tag(e, j) for e in range(50) for j in range(300)}) == 50 * 300


@pytest.mark.parametrize("p", [0.0, 0.1, 0.2, 0.5, 1 - 2**-24, 1.0])
def test_a_keep_mask_is_the_draws_at_least_the_threshold(p):
    """keep_mask (in place, compared unsigned) keeps exactly the elements whose 24-bit draw is
    at least ``ceil(p 2^24)``: against member_bits, for thresholds from none to all."""
    keys = _keys(0, -1, 987654321, -2**31)
    cut = _draws.threshold(p)
    for start, shape in [(0, (5, 7)), (2**31 - 40, (33,))]:
        want = _draws.member_bits(keys, start, shape) >= cut
        got = _draws.keep_mask(keys, start, shape, cut, torch.float32)
        assert got.dtype == torch.float32 and got.shape == want.shape
        assert torch.equal(got, want.float())
    # an element whose draw is the threshold is kept; with the threshold one above, dropped
    bits = _draws.member_bits(keys, 0, (50_000,))
    for r, c in [(0, 0), (1, 3), (3, 49_999)]:
        edge = int(bits[r, c])
        at = _draws.keep_mask(keys, 0, (50_000,), edge, torch.float32)
        above = _draws.keep_mask(keys, 0, (50_000,), edge + 1, torch.float32)
        assert at[r, c] == 1.0 and above[r, c] == 0.0
        assert torch.equal(at, (bits >= edge).float()) and torch.equal(above, (bits > edge).float())
