"""The one training loop of the sequential models, for one model or a stack of them.

Every sequential model trains the same way: epochs of optimiser steps over mini-batches
(temporal or shuffled batches of samples, or groups of the log in time order), one Adam step
per mini-batch, an optional checkpoint every ``checkpoint_every`` epochs (TracIn), optional
early stopping on a held-out interaction per user (``patience``), a progress report per epoch
and, inside :func:`recaudit._resume.resumable`, its state kept at an epoch's end so that a
killed fit resumes there (:mod:`._resume`), and, when the folder asks for it, its finished
state, which a fit of the same training then takes without training an epoch.
What differs is the *step*: which mini-batches an epoch has and what a mini-batch's loss is. A
model supplies that as a :class:`~recaudit.models.sequential._course.Course` (one model's run
through the loop: its network, data, generators and per-step work); :func:`train` runs the
courses.

**A stack** is several courses trained together by one loop: one trial each (its own
perturbed data, seed and draw), each with its own batches, dropout key, loss generator,
Adam state and early stopping, all members of one network whose parameters have a leading
member dimension (:mod:`._stack`; a model trained alone is a stack of one, so there is one
forward per model). At step ``j`` of an epoch every course that still has a ``j``-th
mini-batch contributes its loss: members whose mini-batches share a shape run as one pass
(the epoch's ``objectives``, :mod:`._course`); the losses are summed (the members share no parameter, so each
one's gradients are exactly those of its own loss) and one optimiser step updates every member
that had a batch (a member with fewer batches this epoch, or one that stopped early, is left as
it is).

**A member's numbers never depend on its neighbours**: every member's loss, gradients and Adam
update are bit-identical to those of the same model trained alone (``stack = 1``), on the CPU
(tested for every model): the batched computations are arranged so that each member's slice
uses the arithmetic it has alone (matrix products as batched products of the same shapes,
per-member reductions over its own rows, dropout masks from counters keyed by the member's
seed and step; :mod:`._stack`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from recaudit import _progress as progress
from recaudit import _resume
from recaudit.data import Interactions
from recaudit.models.sequential._course import Course
from recaudit.models.sequential._draws import step_tag
from recaudit.models.sequential._nn import StackAdam, deterministic_torch
from recaudit.models.sequential._resume import Keeper, forget
from recaudit.models.sequential._stack import index_tensor

__all__ = ["train", "train_stack", "available_memory", "warm_train"]


def _end_epoch(course: Course, epoch: int, total: float, tic: float, cpu: float) -> None:
    cfg = course.config
    net = course.net
    assert net is not None
    record: dict[str, Any] = {"epoch": epoch + 1, "loss": total / course.n,
                              "seconds": time.perf_counter() - tic,
                              "cpu_seconds": time.process_time() - cpu}
    if cfg.checkpoint_every and (epoch + 1) % cfg.checkpoint_every == 0:
        course.checkpoints.append((cfg.lr, net.member_state(course.member)))
    if course.valid_q is not None:
        value = course.validate()
        record[f"valid_{cfg.patience_metric}"] = value
        if value > course.best:
            course.best, course.best_state, course.stale = value, \
                net.member_state(course.member), 0
        else:
            course.stale += 1
    course.history.append(record)
    if course.valid_q is not None and cfg.patience is not None and course.stale >= cfg.patience:
        course.stopped = True


def _stop_by(courses: Sequence[Course], done: int) -> int | None:
    """The epoch at which early stopping ends the stack unless a member's validation improves
    (the last of its members' own: ``done + patience - stale``); ``None`` without early
    stopping."""
    cfg = courses[0].config
    if cfg.patience is None or courses[0].valid_q is None:
        return None
    going = [done + cfg.patience - c.stale for c in courses if not c.stopped]
    return min(max(going, default=done), cfg.epochs)


def train(courses: Sequence[Course]) -> None:
    """Train ``courses`` (one, or a stack of several of one model class and configuration)
    for their configured epochs; each gets its history, checkpoints and learned state.

    One network holds every member (:meth:`Course.stack`); each epoch is one object
    (:meth:`Course.epoch`) whose steps give the members' losses as one tensor, one Adam
    (:class:`~recaudit.models.sequential._nn.StackAdam`) updates the members that had a
    mini-batch, each slice with its own moments and step count, and each member's loss total
    of the epoch is a slot of one tensor, read once at the epoch's end. Runs under
    :func:`~recaudit.models.sequential._nn.deterministic_torch` with the members'
    ``num_threads`` on their device (they share both).
    """
    if not courses:
        return
    first = courses[0]
    cfg = first.config
    if any(type(c) is not type(first) or c.config != cfg or c.device != first.device
           for c in courses):
        raise ValueError("a stack trains courses of one model class, configuration and device")
    with deterministic_torch(cfg.num_threads, first.device, fill_uninitialized=False):
        stack = type(first).stack(courses)
        net = stack.net
        opt = StackAdam(net, cfg.lr, cfg.weight_decay)
        last: dict[int, Any] = {}     # each course's last epoch state (what it finishes with)
        where = _resume.current()
        keeper = None if where is None else Keeper(courses, where)
        start = 0 if keeper is None else keeper.restore(net, opt, last)
        if start:
            progress.resumed(start, cfg.epochs)
        done = start
        for epoch in range(start, cfg.epochs):
            active = [c for c in courses if not c.stopped]
            if not active:
                break
            tic, cpu = time.perf_counter(), time.process_time()
            totals = torch.zeros(len(courses), dtype=first.total_dtype, device=first.device)
            net.train()
            run = type(first).epoch(stack, active, epoch)
            for j, step in enumerate(run):
                losses = run.objectives(step, step_tag(epoch, j))
                opt.zero_grad()
                (losses.losses.sum() if losses.losses.dim() else losses.losses).backward()
                opt.step(losses.members)
                totals.index_add_(0, index_tensor(losses.members, first.device),
                                  losses.tallies.to(totals.dtype))
                run.after_update(step, losses)
            for c in active:   # the epoch's one read of the device per member
                last[id(c)] = run.state(c)
                _end_epoch(c, epoch, float(totals[c.member]), tic, cpu)
            done = epoch + 1
            if keeper is not None:
                keeper.keep(epoch, net, opt, last)
            progress.epoch(done, cfg.epochs, _stop_by(courses, done))
        if keeper is not None:
            keeper.keep_final(done, net, opt, last)
        net.eval()
        for c in courses:   # every member's best parameters back before any finishes
            if c.best_state is not None:
                net.load_member_state(c.member, c.best_state)
        for c in courses:
            c.finish(last.get(id(c)))
            c.model.history_ = c.history
            c.model.checkpoints_ = c.checkpoints
            c.model.resumed_seconds_ = 0.0 if keeper is None else keeper.carried
        if keeper is not None:
            keeper.finish()


def train_stack(members: list[tuple[Any, Interactions, int]], device: torch.device,
                memory: int | None = None) -> list[Any]:
    """Train ``members`` (``(model, training log, seed)``, checked by
    :func:`~recaudit.models.sequential.fit_stack`, which documents the memory rules) on
    ``device`` as one stack, or as several when they would not fit or their logs have
    catalogues (items, users) of different sizes; returns the models."""
    import warnings

    from recaudit.errors import RecauditWarning

    catalogues: dict[tuple[int, int], list[int]] = {}
    for i, (_, log, _) in enumerate(members):
        catalogues.setdefault((log.n_items, log.n_users), []).append(i)
    if len(catalogues) > 1:  # one network holds a stack: members of one catalogue each
        for idx in catalogues.values():
            train_stack([members[i] for i in idx], device, memory)
        return [m for m, _, _ in members]
    first, log, seed = members[0]
    # the first member's course, which trains in the first stack, tells what a member needs
    course = first._course(log, seed, device)
    size = len(members)
    if size > 1:
        need = course.training_bytes()
        free = available_memory(device) if memory is None else memory
        if free is not None and size * need > 0.8 * free:
            size = max(1, int(0.8 * free // need))
            warnings.warn(f"a stack of {len(members)} {first.registered_name} models needs "
                          f"about {len(members) * need / 2**30:.2f} GiB ({need / 2**20:.0f} MiB "
                          f"each) and {device} has {free / 2**30:.2f} GiB free: trained as "
                          f"{-(-len(members) // size)} stacks of at most {size}",
                          RecauditWarning, stacklevel=4)
    for lo in range(0, len(members), size):
        _train_splitting(members[lo:lo + size], device, course if lo == 0 else None)
    return [m for m, _, _ in members]


def _train_splitting(members: list[tuple[Any, Interactions, int]],
                     device: torch.device, first: Course | None = None) -> None:
    """Train ``members`` as one stack (``first``: the first member's course, when it is
    built); out of GPU memory, as two halves (fresh courses)."""
    import warnings

    from recaudit.errors import RecauditError, RecauditWarning

    courses = [first] if first is not None else []
    courses += [m._course(t, s, device) for m, t, s in members[len(courses):]]
    try:
        train(courses)
        return
    except torch.cuda.OutOfMemoryError:
        need = courses[0].training_bytes()
        where = _resume.current()
        # the whole stack's kept state (epochs before it ran out of memory): a run stopped
        # while the halves train resumes it, and it fits then or splits again; once the
        # halves are trained it is of no use, and nothing else would remove it
        whole = None if where is None else Keeper(courses, where).path
        del courses, first
        torch.cuda.empty_cache()
        name = members[0][0].registered_name
        if len(members) == 1:
            raise RecauditError(
                f"out of memory on {device} training one {name} model (about "
                f"{need / 2**20:.0f} MiB estimated): lower batch_size or max_len, free the "
                "GPU (other processes, fewer --workers) or train on another device") from None
    half = len(members) // 2
    warnings.warn(f"a stack of {len(members)} {name} models ran out of memory on {device}: "
                  f"trained again as stacks of {half} and {len(members) - half}",
                  RecauditWarning, stacklevel=4)
    _train_splitting(members[:half], device)
    _train_splitting(members[half:], device)
    if whole is not None:
        forget(whole)


def available_memory(device: torch.device) -> int | None:
    """Bytes free for training on ``device`` (CUDA: the driver's free memory; CPU: the
    system's available memory, ``MemAvailable``), ``None`` when unknown."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def warm_train(model: Any, previous: Any, train: Interactions, new_from: int, seed: int,
               epochs: int, lr: float | None) -> list[dict[str, Any]]:
    """A warm start (:meth:`SequentialRecommender.warm_start`): ``model`` takes a copy of
    ``previous``'s trained network and continues it on the targets of ``train`` at log rows
    ``new_from`` and after (the window), for ``epochs`` epochs of the model's next-item loss
    with a fresh Adam at ``lr`` (the model's own when ``None``) and its ``batch_size``,
    ``batch_order`` and ``weight_decay``. The samples are the model's own over the whole of
    ``train`` (so a target's context is what the model's fit gives it, older rows included),
    those with a target in the window; in a ``"window"`` sample the targets before the window
    are masked out of the loss (target ``-100``), so only the window's targets train, each
    once per epoch. Dropout masks come from ``make_torch_generator(seed, name, "warm",
    "dropout")``, shuffled orders from ``make_rng(seed, name, "warm", "order", epoch)``: the
    same previous fit, log and seed give a bit-identical network. Returns one history entry
    per epoch (``phase = "warm"``)."""
    import copy

    from recaudit.errors import DataError
    from recaudit.models.sequential._nn import make_adam, set_dropout_generator
    from recaudit.seeds import make_rng, make_torch_generator

    cfg, name = model.config, model.registered_name
    device = previous.device_
    data = model._make_data(train)
    ids = np.flatnonzero(data.key >= new_from)   # key: the sample's last (latest) target
    if not len(ids):
        raise DataError(f"{name}: no training target in the window (log rows {new_from} on): "
                        "every interaction in it is a user's first", source=train.name,
                        hint="give a longer window")
    history: list[dict[str, Any]] = []
    targets = _window_targets(data, ids, new_from)
    with deterministic_torch(cfg.num_threads, device):
        net = copy.deepcopy(previous._fitted())
        set_dropout_generator(net, make_torch_generator(seed, name, "warm", "dropout",
                                                        device=device))
        opt = make_adam([p for p in net.parameters() if p.requires_grad],
                        cfg.lr if lr is None else lr, cfg.weight_decay)
        loss_rng = make_rng(seed, name, "warm", "loss")
        for epoch in range(epochs):
            tic, cpu = time.perf_counter(), time.process_time()
            net.train()
            if cfg.batch_order == "temporal":
                order = ids[np.argsort(data.key[ids], kind="stable")]
            else:
                order = ids[make_rng(seed, name, "warm", "order", epoch).permutation(len(ids))]
            total = torch.zeros((), dtype=torch.float64, device=device)
            for lo in range(0, len(order), cfg.batch_size):
                part = order[lo:lo + cfg.batch_size]
                batch = _window_only(data, part, data.batch(part, device, model.uses_time),
                                     new_from)
                loss, _ = model.instance_scores(net, batch, loss_rng)
                total += loss.detach() * len(part)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            history.append({"epoch": epoch + 1, "phase": "warm",
                            "loss": float(total) / len(ids), "samples": int(len(ids)),
                            "targets": targets,
                            "seconds": time.perf_counter() - tic,
                            "cpu_seconds": time.process_time() - cpu})
            progress.epoch(epoch + 1, epochs)
        net.eval()
        set_dropout_generator(net, None)
    model.network_ = net
    return history


def _positions(data: Any, ids: Any) -> Any:
    """The user-major positions of the targets of samples ``ids`` of a ``"window"`` layout, in
    the order of a batch's ``sel`` (sample by sample, position by position)."""
    lens = data.length[ids]
    first = np.cumsum(lens) - lens
    return np.repeat(data.start[ids], lens) + np.arange(int(lens.sum())) \
        - np.repeat(first, lens) + 1


def _window_targets(data: Any, ids: Any, new_from: int) -> int:
    """How many targets of samples ``ids`` lie in the window (log rows ``new_from`` on)."""
    if data.layout == "prefix":
        return int(len(ids))
    return int(np.sum(data.rows[_positions(data, ids)] >= new_from))


def _window_only(data: Any, ids: Any, batch: Any, new_from: int) -> Any:
    """``batch`` (samples ``ids``) with its targets before the window masked out of the loss
    (``-100``, what the cross-entropy ignores); prefix samples, one target each, all in it."""
    if data.layout == "prefix":
        return batch
    before = data.rows[_positions(data, ids)] < new_from
    if before.any():
        mask = torch.as_tensor(before).to(batch.sel_targets.device)
        batch.sel_targets = torch.where(mask, torch.full_like(batch.sel_targets, -100),
                                        batch.sel_targets)
    return batch
