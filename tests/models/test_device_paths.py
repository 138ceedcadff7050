"""The accelerator code paths, exercised on the CPU: no host synchronisation while training,
device-side batches equal to the host-built ones."""

import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from recaudit.models import create
from recaudit.models.sequential._samples import SequenceData
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
        if func is aten._local_scalar_dense.default and args[0].dtype == torch.int64:
            self.calls.append(name + "[int64]")  # see test_training_inner_loop_...
        elif func in _ALWAYS:
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
    "latentcross-history": dict(embedding_dim=8, hidden_dim=8, samples="history"),
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
    scalar_reads = [c for c in rec.calls if c == "aten._local_scalar_dense.default"]
    int_reads = [c for c in rec.calls if c.endswith("[int64]")]
    others = [c for c in rec.calls if "_local_scalar_dense" not in c]
    assert others == []
    assert len(scalar_reads) == 2  # the two epochs' losses
    # nn.GRU reads the first of a PackedSequence's batch sizes, which PyTorch keeps on the
    # host on every device (history samples: one packed call per mini-batch): not a wait
    assert int_reads == [] or key == "latentcross-history"


def _reference(data, ids, pad_left):
    """Plain-loop construction of a batch: left-aligned context (or right-aligned in max_len
    columns), targets, and the time features, one sample at a time."""
    lens = [int(data.length[i]) for i in ids]
    width = data.max_len if pad_left else max(max(lens), 1)
    items = np.zeros((len(ids), width), np.int64)
    targets = np.full((len(ids), width), -1, np.int64)
    times = np.zeros((len(ids), width))
    nxt = np.zeros((len(ids), width))
    for b, i in enumerate(ids):
        s, n = int(data.start[i]), lens[b]
        off = width - n if pad_left else 0
        for j in range(n):
            items[b, off + j] = data.item[s + j] + 1
            times[b, off + j] = data.time[s + j]
            nxt[b, off + j] = data.time[s + j + 1]
            if data.layout == "window":
                targets[b, j] = data.item[s + j + 1]
        if data.layout == "prefix":
            targets[b, width - 1 if pad_left else max(n, 1) - 1] = data.item[s + n]
    valid = items > 0
    first = np.array([row[v][0] if v.any() else 0.0 for row, v in zip(times, valid)])
    rel = np.where(valid, times - (first[:, None] if pad_left else times[:, :1]), 0.0)
    gaps = np.zeros_like(times)
    gaps[:, 1:] = np.where(valid[:, 1:], times[:, 1:] - times[:, :-1], 0.0)
    nxt = np.where(valid, np.maximum(nxt - times, 0.0), 0.0)
    return items, targets, rel, gaps, nxt


@pytest.mark.parametrize("layout,opts", [("prefix", {}), ("window", {}),
                                         ("prefix", {"first_samples": True}),
                                         ("prefix", {"first_samples": True, "pad_left": True})])
def test_device_batches_equal_plain_construction(layout, opts):
    """A stack's epoch on the device (three members: the log, one row fewer, another user
    fewer; ``StackData``): every member's mini-batches are the plain construction of its own
    samples in its own order, its scored positions in row-major order, padded with ignored
    targets."""
    from recaudit.models.sequential._epochs import StackData
    from recaudit.models.sequential._stack import padded

    train, _ = leave_last_out(planted_log(n_users=7, length=15))
    rows = np.arange(len(train))
    logs = [train, train.take(np.delete(rows, 9)), train.take(rows[train.user != 2])]
    datas = [SequenceData(log, max_len=5, layout=layout, **opts) for log in logs]
    orders = {k: d.order("shuffled", np.random.default_rng(k)) for k, d in enumerate(datas)}
    with_time = not opts.get("pad_left")
    store = StackData(datas, torch.device("cpu"), with_time)
    plan = store.plan(orders, 6)
    seen = {k: 0 for k in orders}
    n_first = train.n_users if opts.get("first_samples") else 0
    assert datas[0].n_targets == len(train) - train.n_users + n_first
    for j, step in enumerate(plan.steps):
        for group in step:
            b = store.batch(plan, group)
            assert b.sel.shape[1] == group.targets
            for r, k in enumerate(group.members):
                ids = orders[k][6 * j:6 * j + 6]
                seen[k] += len(ids)
                items, targets, rel, gaps, nxt = _reference(datas[k], ids,
                                                            opts.get("pad_left", False))
                assert np.array_equal(b.items[r].numpy(), items)
                assert np.array_equal(b.targets[r].numpy(), targets)
                flat = targets.reshape(-1)
                n = int((flat >= 0).sum())
                assert b.counts[r] == n and group.targets == padded(n)
                assert np.array_equal(b.sel[r, :n].numpy(), np.flatnonzero(flat >= 0))
                assert np.array_equal(b.sel_targets[r, :n].numpy(), flat[flat >= 0])
                assert (b.sel_targets[r, n:] == -100).all()
                if with_time:
                    np.testing.assert_allclose(b.gaps[r].numpy(), gaps, rtol=1e-6)
                    np.testing.assert_allclose(b.next_gaps[r].numpy(), nxt, rtol=1e-6)
                    if layout == "window" or not opts:
                        np.testing.assert_allclose(b.times[r].numpy(), rel)
    assert seen == {k: len(d) for k, d in enumerate(datas)}


def test_training_runs_without_the_deterministic_nan_fill_and_restores_it(monkeypatch):
    """Training and ranking run deterministic algorithms without torch's NaN fill of fresh
    tensors (nothing reads memory it did not write; the fill was a third of SASRec's
    operators), and the caller's setting is back afterwards."""
    import torch.utils.deterministic as det

    from recaudit.models import create
    from recaudit.models.sequential import SASRec

    seen = []
    batched = SASRec._objectives

    def spy(self, net, batch, m, rngs):
        seen.append((det.fill_uninitialized_memory, torch.are_deterministic_algorithms_enabled()))
        return batched(self, net, batch, m, rngs)

    monkeypatch.setattr(SASRec, "_objectives", spy)
    train, queries = leave_last_out(planted_log(n_users=7, length=15))
    assert det.fill_uninitialized_memory is True       # torch's default
    model = create("sasrec", epochs=1, embedding_dim=8, batch_size=8).fit(train, seed=0)
    assert seen and set(seen) == {(False, True)}
    model.score(queries)
    assert det.fill_uninitialized_memory is True and not torch.are_deterministic_algorithms_enabled()
