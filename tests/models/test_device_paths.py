"""The accelerator code paths, exercised on the CPU: no host synchronisation while training,
device-side batches equal to the host-built ones."""

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from recaudit.models import create
from recaudit.models._samples import SequenceData, _make_batch
from recaudit.models.testing import leave_last_out, planted_log

aten = torch.ops.aten

# aten ops that make the host wait for an accelerator (value read back or data-dependent shape)
_ALWAYS = {aten._local_scalar_dense.default, aten.nonzero.default, aten.masked_select.default,
           aten.unique_consecutive.default, aten._unique2.default, aten.item.default}


class SyncRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = str(func)
        if func in _ALWAYS:
            self.calls.append(name)
        elif func.overloadpacket in (aten.index, aten.index_put, aten.index_put_):
            idx = args[1]
            if any(t is not None and t.dtype == torch.bool for t in idx):
                self.calls.append(name + "[bool]")
        elif func.overloadpacket is aten.repeat_interleave and kwargs.get("output_size") is None:
            self.calls.append(name)
        elif func.overloadpacket is aten._to_copy and kwargs.get("device") is not None and \
                torch.device(kwargs["device"]).type == "cpu" and args[0].device.type != "cpu":
            self.calls.append(name)
        return func(*args, **kwargs)


MODELS = {
    "gru4rec": dict(embedding_dim=8, hidden_dim=8),
    "lstm": dict(embedding_dim=8, hidden_dim=8, samples="prefix", batch_order="temporal"),
    "sasrec": dict(embedding_dim=8, dropout=0.3),
    "tisasrec": dict(embedding_dim=8, time_span=8),
    "bert4rec": dict(embedding_dim=8, max_len=6),
    "latentcross": dict(embedding_dim=8, hidden_dim=8),
    "latentcross-prefix": dict(embedding_dim=8, hidden_dim=8, samples="prefix"),
    "jodie": dict(embedding_dim=8),
}


@pytest.mark.parametrize("key", sorted(MODELS))
def test_training_inner_loop_never_waits_for_the_device(key):
    """Only the per-epoch loss read (``float(total)``) may synchronise: one per epoch."""
    train, _ = leave_last_out(planted_log(n_users=10, length=12))
    model = create(key.split("-")[0], epochs=2, batch_size=16, **MODELS[key])
    if key == "jodie":
        model._rnn_impl = "torch"  # the recurrence that runs on accelerators
    rec = SyncRecorder()
    with rec:
        model.fit(train, seed=0)
    scalar_reads = [c for c in rec.calls if "_local_scalar_dense" in c]
    others = [c for c in rec.calls if "_local_scalar_dense" not in c]
    assert others == []
    assert len(scalar_reads) == 2  # the two epochs' losses


@pytest.mark.parametrize("layout", ["prefix", "window"])
def test_device_batches_equal_host_built_batches(layout):
    train, _ = leave_last_out(planted_log(n_users=7, length=15))
    data = SequenceData(train, max_len=5, layout=layout)
    order = data.order("shuffled", np.random.default_rng(1))
    batches = list(data.epoch_batches(order, 6, "cpu", with_time=True))
    assert sum(len(b) for b in batches) == len(data)
    for j, b in enumerate(batches):
        ids = order[6 * j:6 * j + 6]
        width = int(data.length[ids].max())
        ref = _make_batch(data.item, data.time, data.user, data.start[ids], data.length[ids],
                          layout == "prefix", width, "cpu", True)
        for f in ("items", "lengths", "targets", "users", "times", "gaps", "next_gaps"):
            assert torch.equal(getattr(b, f), getattr(ref, f)), f
        flat = ref.targets.reshape(-1)
        want = torch.nonzero(flat >= 0).ravel()
        assert torch.equal(b.sel, want) and torch.equal(b.sel_targets, flat[want])


def test_dropout_masks_come_from_a_generator_on_the_tensor_device():
    from recaudit.models._nn import SeededDropout

    drop = SeededDropout(0.5)
    x = torch.ones(2000)
    drop.generator = torch.Generator().manual_seed(0)
    a = drop(x)
    drop.generator = torch.Generator().manual_seed(0)
    assert torch.equal(a, drop(x))
    assert set(a.unique().tolist()) == {0.0, 2.0}   # inverted dropout scaling
    assert abs(float((a == 0).float().mean()) - 0.5) < 0.05
    drop.eval()
    assert torch.equal(drop(x), x)
