"""Batched computation of a stack's losses: parameters stacked along a leading member dimension.

:func:`stacked_objectives` computes the losses of several members of a stack at one training
step (:mod:`recaudit.models.sequential._train`) as one batched computation where a network
offers one (``SequenceNet.stacked_forward``). Members whose mini-batches have the same shape
``[B, W]`` form a group; each group runs as one pass over tensors with a leading member
dimension ``K``:

- embedding look-ups gather from the members' tables stacked as ``[K, N, D]`` (one gather; the
  padding item reads a zero row and receives no gradient, as ``nn.Embedding(padding_idx=0)``);
- matrix products run as batched products of the members' own shapes (``bmm`` / ``baddbmm``:
  the slice of member ``k`` is the product its unstacked ``mm`` / ``addmm`` computes, bit for bit
  on the CPU);
- what must be member-by-member to give a member's own arithmetic runs per member: recurrent
  layers (each member's own ``nn.GRU`` / ``nn.LSTM``, the fused kernel), layer norms (the fused
  affine backward reduces differently from a split one), dropout masks (each drawn from the
  member's generator, in its own shape and order), the cross-entropy over the member's own
  targets (a mean over its rows);
- after the trunk, the positions that predict a target are selected per member; when every
  member of the group has as many (prefix samples: one per sample) the head and the output
  layer run batched too, else each member's on its own rows (a batched product over rows
  padded to the largest count was seen to reduce the output layer's gradient in another
  order).

Whether a model's stack runs batched is the model's to say (``_batches_in_stack``: BERT4Rec's
Cloze loss and the cascade models' histories do not); a group of one member runs the member's
own ``instance_scores``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from recaudit.models.sequential._nn import SeededDropout, SequenceNet, required
from recaudit.models.sequential._samples import Batch

__all__ = ["stacked_objectives", "stack", "embed", "dropout", "linear", "per_member"]


def stack(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The members' tensors along a new leading dimension (differentiable: each member's
    parameter receives its own slice of the gradient)."""
    return torch.stack(list(tensors))


def embed(tables: Sequence[nn.Embedding], idx: torch.Tensor) -> torch.Tensor:
    """``tables[k](idx[k])`` for every member ``k`` as one gather ``[K, *idx.shape[1:], D]``.

    A table with ``padding_idx`` (0: the padding item) reads zeros there and gives it no
    gradient, as ``nn.Embedding`` does: padding positions read row 0 of the first table, which
    is zero and receives no gradient (``F.embedding``'s ``padding_idx``)."""
    weight = stack([t.weight for t in tables])
    k, n = weight.shape[:2]
    offset = (torch.arange(k, device=idx.device) * n).view(-1, *([1] * (idx.dim() - 1)))
    flat = idx + offset
    pad = tables[0].padding_idx
    if pad is not None:
        flat = torch.where(idx == pad, pad, flat)
    return F.embedding(flat, weight.reshape(k * n, -1), padding_idx=pad)


def dropout(x: torch.Tensor, drops: Sequence[SeededDropout]) -> torch.Tensor:
    """Each member's :class:`SeededDropout` on its slice ``x[k]`` (the mask drawn from the
    member's generator in the shape it would draw alone)."""
    first = drops[0]
    if not first.training or first.p <= 0.0 or any(d.generator is None for d in drops):
        return x
    masks = [torch.rand(x.shape[1:], generator=d.generator, device=x.device,
                        dtype=x.dtype) >= d.p for d in drops]
    return x * torch.stack(masks) / (1.0 - first.p)


def linear(x: torch.Tensor, layers: Sequence[nn.Linear]) -> torch.Tensor:
    """``layers[k](x[k])`` for ``x`` ``[K, ..., in]`` as one batched product (``baddbmm``
    over the flattened rows: what ``F.linear`` computes with ``addmm``)."""
    k, *mid, width = x.shape
    w = stack([layer.weight for layer in layers]).transpose(1, 2)
    flat = x.reshape(k, -1, width)
    if layers[0].bias is None:
        out = torch.bmm(flat, w)
    else:
        out = torch.baddbmm(stack([layer.bias for layer in layers]).unsqueeze(1), flat, w)
    return out.view(k, *mid, out.shape[-1])


def per_member(fn: Callable[..., torch.Tensor], *args: Sequence[Any] | torch.Tensor
               ) -> torch.Tensor:
    """``stack([fn(a[k], b[k], ...) for k])``: a member-by-member step of a batched pass."""
    return stack([fn(*parts) for parts in zip(*args, strict=True)])


def stacked_objectives(model: Any, members: Sequence[tuple[SequenceNet, Batch,
                                                          np.random.Generator]]
                       ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(loss, tally)`` of each member ``(network, mini-batch, loss generator)`` of
    ``model``'s stack at one step, in order (see the module docstring): groups of members
    whose batches share a shape run batched; the tally is what the loss adds to the epoch's
    total."""
    out: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(members)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (_, batch, _) in enumerate(members):
        groups.setdefault(tuple(batch.items.shape), []).append(i)
    for idx in groups.values():
        if len(idx) == 1:
            net, batch, rng = members[idx[0]]
            loss = model.instance_scores(net, batch, rng)[0]
            out[idx[0]] = (loss, loss.detach() * len(batch))
            continue
        pairs = [members[i][:2] for i in idx]
        for i, res in zip(idx, _batched(model, pairs), strict=True):
            out[i] = res
    return [o for o in out if o is not None]


def _batched(model: Any, members: Sequence[tuple[SequenceNet, Batch]]
             ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    nets = [n for n, _ in members]
    batches = [b for _, b in members]
    net_type = type(nets[0])
    trunk = net_type.stacked_forward(nets, batches)             # [K, B, W, D]
    k, b, w, d = trunk.shape
    sels = [required(bt.sel, "target positions") for bt in batches]
    counts = [len(s) for s in sels]
    if any(c != counts[0] for c in counts):
        # members with different numbers of targets (window samples): the rest of each one's
        # pass on its own rows — a batched product over padded rows may reduce (the output
        # layer's gradient) in another order
        out = []
        for i, (net, bt) in enumerate(members):
            h = trunk[i].reshape(b * w, d).index_select(0, sels[i])
            head = getattr(net, "head", None)
            scores = model._logits(net, h if head is None else head(h))
            loss = F.cross_entropy(scores, required(bt.sel_targets, "targets"))
            out.append((loss, loss.detach() * len(bt)))
        return out
    n = counts[0]
    idx = torch.stack([s + i * b * w for i, s in enumerate(sels)])
    h = trunk.reshape(k * b * w, d).index_select(0, idx.view(-1)).view(k, n, d)
    h = net_type.stacked_head(nets, h)
    weights, biases = zip(*(net.output() for net in nets), strict=True)
    scores = torch.bmm(h, stack(weights).transpose(1, 2))
    if biases[0] is not None:
        scores = scores + stack(biases).unsqueeze(1)
    out = []
    for i, bt in enumerate(batches):
        loss = F.cross_entropy(scores[i], required(bt.sel_targets, "targets"))
        out.append((loss, loss.detach() * len(bt)))
    return out
