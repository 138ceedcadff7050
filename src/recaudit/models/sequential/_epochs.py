"""A stack's samples on its device, and its epochs planned once each.

:class:`StackData` holds the training samples of every member of a stack (each member's own
:class:`~recaudit.models.sequential._samples.SequenceData`) as one set of device tensors, the
members' sequences concatenated. :meth:`StackData.plan` plans an epoch on the host, once: each
member's mini-batches in its own order, their widths and numbers of targets, and at every step
the *groups* of members whose mini-batches share a shape (rows, width, padded number of
targets, :func:`~recaudit.models.sequential._stack.padded`); the sample ids of the whole epoch
then go to the device in one copy. :meth:`StackData.batch` builds a group's
:class:`~recaudit.models.sequential._samples.StackBatch` with a fixed number of device
operations whatever the group's size, and never reads the device: a step does not wait for it.

A member's mini-batches are exactly those it has alone (the same samples, order, widths and
targets): the gather only copies values, and a member's scored positions are its own row-major
target positions (a stable sort of its mask), padded with ignored targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from recaudit.models.sequential._samples import SequenceData, StackBatch, gather_rows
from recaudit.models.sequential._stack import padded

__all__ = ["StackData", "EpochPlan", "Group"]


@dataclass(frozen=True)
class Group:
    """Members (stack positions) whose mini-batches at one step share ``rows``, ``width`` and
    the padded number of targets ``targets``; their sample ids are ``ids[lo:hi]`` of the
    epoch's plan, member after member; ``host_lengths``: each member's context lengths."""

    members: tuple[int, ...]
    rows: int
    width: int
    targets: int
    lo: int
    hi: int
    host_lengths: tuple[np.ndarray, ...]


@dataclass
class EpochPlan:
    """An epoch of a stack: per step, its groups; ``ids``: every group's sample ids (global:
    into :class:`StackData`), on the device."""

    steps: list[list[Group]]
    ids: torch.Tensor


class StackData:
    """The samples of a stack's members (one :class:`SequenceData` each, one layout) on
    ``device`` as one store (see the module docstring)."""

    def __init__(self, datas: Sequence[SequenceData], device: torch.device,
                 with_time: bool) -> None:
        first = datas[0]
        self.datas, self.device, self.with_time = list(datas), device, with_time
        self.layout, self.pad_left, self.max_len = first.layout, first.pad_left, first.max_len
        items = np.cumsum([0] + [len(d.item) for d in datas])
        self.sample_offset = np.cumsum([0] + [len(d) for d in datas])

        def t(parts):
            return torch.as_tensor(np.concatenate(parts)).to(device)

        self.dev = {"item": t([d.item for d in datas]), "time": t([d.time for d in datas]),
                    "user": t([d.user for d in datas]),
                    "start": t([d.start + off for d, off in zip(datas, items, strict=False)]),
                    "length": t([d.length for d in datas]),
                    "cols": torch.arange(self.max_len + 1, device=device)}

    def plan(self, orders: dict[int, np.ndarray], batch_size: int) -> EpochPlan:
        """The epoch of the members in ``orders`` (stack position -> its samples' order):
        at each step, members whose mini-batches have one shape form a group."""
        window = self.layout == "window"
        steps: list[list[Group]] = []
        chunks: list[np.ndarray] = []
        n = 0
        n_steps = max((-(-len(o) // batch_size) for o in orders.values()), default=0)
        for j in range(n_steps):
            keyed: dict[tuple[int, ...], list[tuple[int, np.ndarray, np.ndarray]]] = {}
            for k, order in orders.items():
                ids = order[j * batch_size:(j + 1) * batch_size]
                if not len(ids):
                    continue
                lens = self.datas[k].length[ids]
                width = self.max_len if self.pad_left else max(int(lens.max()), 1)
                count = int(lens.sum()) if window else len(ids)
                key = (len(ids), width, padded(count))
                keyed.setdefault(key, []).append((k, ids, lens))
            step = []
            for (rows, width, targets), members in keyed.items():
                gids = np.concatenate([ids + self.sample_offset[k] for k, ids, _ in members])
                step.append(Group(tuple(k for k, _, _ in members), rows, width, targets, n,
                                  n + len(gids), tuple(lens for _, _, lens in members)))
                chunks.append(gids)
                n += len(gids)
            steps.append(step)
        ids = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
        return EpochPlan(steps, torch.as_tensor(ids.astype(np.int64)).to(self.device))

    def batch(self, plan: EpochPlan, group: Group) -> StackBatch:
        """The stacked mini-batch of ``group`` (device operations only)."""
        k, b, w, r = len(group.members), group.rows, group.width, group.targets
        gids = plan.ids[group.lo:group.hi]
        start, length = self.dev["start"][gids], self.dev["length"][gids]
        last_only = self.layout == "prefix"
        rows = gather_rows(self.dev, start, length, w, pad_left=self.pad_left,
                           last_only=last_only, with_time=self.with_time)
        if last_only:
            sel = (torch.arange(b, device=start.device) * w + rows.lengths.view(k, b) - 1)
            assert rows.last_targets is not None
            targets = rows.last_targets.view(k, b)
            if r > b:
                sel = torch.nn.functional.pad(sel, (0, r - b), value=0)
                targets = torch.nn.functional.pad(targets, (0, r - b), value=-100)
        else:
            mask = rows.valid.view(k, b * w)
            sel = torch.argsort((~mask).to(torch.uint8), dim=1, stable=True)[:, :r]
            if r > b * w:
                sel = torch.nn.functional.pad(sel, (0, r - b * w), value=0)
            counts = mask.sum(1, keepdim=True)
            real = torch.arange(r, device=start.device)[None, :] < counts
            targets = torch.where(real, rows.targets.view(k, b * w).gather(1, sel), -100)
        shape = (k, b, w)

        def view(t: torch.Tensor | None) -> torch.Tensor | None:
            return None if t is None else t.view(shape)

        return StackBatch(rows.items.view(shape), rows.lengths.view(k, b),
                          rows.targets.view(shape), rows.users.view(k, b), view(rows.times),
                          view(rows.gaps), view(rows.next_gaps), sel, targets,
                          [int(lens.sum()) if not last_only else b
                           for lens in group.host_lengths], list(group.host_lengths))
