"""FINEST: rank-preserving fine-tuning (Oh, Ustun, McAuley & Kumar 2024, "FINEST: Stabilizing
Recommendations by Rank-Preserving Fine-Tuning", arXiv 2402.03481).

``fit(train, seed)`` of a FINEST-stabilised model:

1. **pre-training** — the model's own ``fit(train, seed)``, unchanged (the plain model);
2. **reference lists** — for every training instance (the prediction after a user's training
   interaction ``j``, :mod:`._finest_parts`) the top-``2K`` items of the *reference model*;
3. **fine-tuning** for ``epochs`` epochs with a fresh Adam at ``lr``: each epoch draws one
   simulated perturbation of ``train`` (``ratio`` of its interactions deleted, replaced by the
   least popular item, or followed by an inserted interaction with it) and trains one epoch on
   it with

       L = L_model + weight * L_rank

   where ``L_model`` is the model's own training loss on the simulated log and ``L_rank`` the
   rank-preserving loss of every instance that still has a reference list.

The reference model (``anchor``): ``"original"`` (default; the authors' evaluation protocol) —
the model pre-trained on the *unperturbed* training data of the trial with the unperturbed
model's seed, so the perturbed model is fine-tuned towards the lists of the model it replaces
(the deployed model); in an audit the runner passes it (:class:`~recaudit.stabilise.Anchor`),
and a model fitted without an anchor uses its own pre-trained model. ``"self"`` — always the
model's own pre-trained model: no information from outside its training data.

Differences from the authors' code (``src/*_trainer.py`` of claws-lab/finest-recsys), and why:

- reference lists come from the pre-trained model in evaluation mode after training (theirs:
  from the training forward pass of the last pre-training epoch, with dropout on and the
  parameters changing batch by batch), so they are exactly the lists the model serves;
- an instance is identified by its interaction (user, item, time), not by a row index, so the
  same rule serves the simulated and the audit's perturbations; theirs too gives edited rows
  no reference;
- insertion puts the new interaction *after* a drawn row (``recaudit.perturb``'s rule; theirs:
  before it, i.e. after the user's previous row: the same distribution up to users' first rows);
- ``L_rank`` is averaged over the batch's instances; theirs adds ``0.1 (L_order + L_top)`` per
  user of a batch of ``B`` users (B = 8, 16, 32 by model), i.e. ``weight ≈ 0.1 B`` = 0.8–3.2
  here; default ``weight = 1``;
- defaults ``lr = 1e-4`` (theirs: 1e-4 for LRURec and BERT4Rec, 1e-3 for TiSASRec), ``epochs``
  = the model's ``epochs`` (theirs: 50 + 50), ``topk = 100``, ``margin = 0.1``, ``ratio = 0.01``
  as theirs; no gradient clipping (theirs clips at 5 for LRURec only); ``patience`` applies to
  pre-training only.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import torch

from recaudit import _progress as progress
from recaudit.config import Config
from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import ConfigError
from recaudit._torch import deterministic_torch
from recaudit.models import JODIE
from recaudit.models.sequential import SequentialRecommender, make_adam, set_dropout_generator
from recaudit.seeds import make_rng, make_torch_generator
from recaudit.stabilise._finest_parts import (EDITS, Reference, instance_logits, match_rows,
                                              rank_preserving_loss, reference_lists, simulate)
from recaudit.stabilise._protocol import Anchor, maker, register_method
from recaudit.stabilise._protocol import options as _options

__all__ = ["FinestConfig", "Finest"]


@dataclass(frozen=True)
class FinestConfig(Config):
    """FINEST options (Oh et al. 2024; module docstring for the differences from their code).

    epochs: fine-tuning epochs (None: the model's ``epochs``). lr: fine-tuning Adam learning
    rate (1e-4). topk: K, reference items kept per instance; ranks K+1..2K are the competitors
    (100). margin: m of the hinge losses (0.1). weight: λ of the rank-preserving loss (1.0).
    ratio: share of the training interactions edited per simulated perturbation (0.01).
    edits: simulated edit kinds, one drawn per epoch (``delete``, ``replace``, ``insert``).
    anchor: reference model, ``"original"`` (the unperturbed model of the trial) or ``"self"``
    (the model's own pre-trained model).
    """

    epochs: int | None = None
    lr: float = 1e-4
    topk: int = 100
    margin: float = 0.1
    weight: float = 1.0
    ratio: float = 0.01
    edits: tuple[str, ...] = EDITS
    anchor: Literal["original", "self"] = "original"

    def validate(self) -> None:
        if self.epochs is not None and self.epochs < 1:
            raise self.invalid("epochs", f"must be >= 1 (or None), got {self.epochs}")
        for key in ("lr", "margin"):
            if not getattr(self, key) > 0:
                raise self.invalid(key, f"must be > 0, got {getattr(self, key)}")
        if self.topk < 1:
            raise self.invalid("topk", f"must be >= 1, got {self.topk}")
        if self.weight < 0:
            raise self.invalid("weight", f"must be >= 0, got {self.weight}")
        if not 0.0 <= self.ratio < 1.0:
            raise self.invalid("ratio", f"must be in [0, 1), got {self.ratio}")
        bad = [e for e in self.edits if e not in EDITS]
        if bad or not self.edits:
            raise self.invalid("edits", f"must be a non-empty list of {', '.join(EDITS)}; "
                                        f"got {list(self.edits)}")


#: Reference lists computed in this process, by cache key (the last few).
_MEMO: OrderedDict[str, Reference] = OrderedDict()


class Finest:
    """A sequential model stabilised by FINEST (see the module docstring).

    After ``fit``: ``model`` is the fine-tuned model, ``history_`` its pre-training epochs
    then the fine-tuning epochs (``phase = "finest"``; ``rank_loss``, ``instances``: the share
    of the model's predictions with a reference list), ``timing_`` wall and CPU seconds of the
    three stages.
    """

    uses_anchor = True

    def __init__(self, model: str | Callable[[], Any], params: Mapping[str, Any] | None = None,
                 stabilise: FinestConfig | Mapping[str, Any] | None = None, **options: Any
                 ) -> None:
        config: FinestConfig = _options(FinestConfig, "finest", stabilise, options)
        built = maker(model, params)()
        if not isinstance(built, SequentialRecommender) or isinstance(built, JODIE):
            name = getattr(built, "registered_name", type(built).__name__)
            raise ConfigError(f"stabilise.method = 'finest' fine-tunes models trained by the "
                              f"shared sequential loop (lstm, gru4rec, sasrec, tisasrec, "
                              f"bert4rec, latentcross); {name!r} is not one of them",
                              key="method", hint="use method = 'ensemble' for any model")
        if getattr(built.config, "samples", None) == "history":
            raise ConfigError("stabilise.method = 'finest' fine-tunes window and prefix "
                              "samples; latentcross with samples = 'history' carries each "
                              "user's state over the whole log, which FINEST's instances do "
                              "not model", key="method",
                              hint="use samples = 'window' with FINEST, or method = 'ensemble'")
        self.model: SequentialRecommender = built
        self.config = config
        self.registered_name = f"{built.registered_name}+finest"

    def get_params(self) -> dict[str, Any]:
        return {"model": self.model.registered_name, "params": self.model.get_params(),
                "stabilise": {"method": "finest", **self.config.to_dict()}}

    def __repr__(self) -> str:
        return f"Finest({self.model!r})"

    # ------------------------------------------------------------------ fit
    def fit(self, train: Interactions, *, seed: int, anchor: Anchor | None = None) -> Finest:
        """Pre-train, derive the reference lists, fine-tune (module docstring)."""
        seed = SequentialRecommender._check_fit_args(train, seed)
        timing: dict[str, float] = {}
        clock = _Clock(timing)
        with clock("pretrain"):
            self.model.fit(train, seed=seed)
        with clock("reference"):
            origin_log, ref = self._reference(train, seed, anchor)
        with clock("finetune"):
            tuned = self._finetune(train, origin_log, ref, seed)
        self.history_ = [{**h, "phase": "pretrain"} for h in self.model.history_] + tuned
        self.timing_ = timing
        return self

    def _reference(self, train: Interactions, seed: int, anchor: Anchor | None
                   ) -> tuple[Interactions, Reference]:
        k = self.config.topk
        if anchor is None or self.config.anchor == "self":
            return train, reference_lists(self.model, train, k)
        from recaudit._ids import spec_id

        key = spec_id({"model": self.model.registered_name, "params": self.model.get_params(),
                       "topk": k, "seed": anchor.seed}, anchor.train.fingerprint())
        path = None if anchor.cache_dir is None else Path(anchor.cache_dir) / f"finest-{key}.npz"
        if anchor.seed == seed and anchor.train.fingerprint() == train.fingerprint():
            ref = reference_lists(self.model, train, k)  # this model is the reference model
        elif key in _MEMO:
            ref = _MEMO[key]
        elif path is not None and path.exists():
            with np.load(path) as z:
                ref = Reference(z["top"], z["comp"], z["has"])
        else:
            other = type(self.model)(**self.model.get_params()).fit(anchor.train,
                                                                    seed=anchor.seed)
            ref = reference_lists(other, anchor.train, k)
        _MEMO[key] = ref
        while len(_MEMO) > 2:
            _MEMO.popitem(last=False)
        if path is not None and not path.exists():
            from recaudit._files import atomic_path

            with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                np.savez(fh, top=ref.top, comp=ref.comp, has=ref.has)
        return anchor.train, ref

    def _finetune(self, train: Interactions, origin_log: Interactions, ref: Reference,
                  seed: int) -> list[dict[str, Any]]:
        cfg, model = self.config, self.model
        mcfg = model.config
        name, device, net = model.registered_name, model.device_, model.network
        history = []
        with deterministic_torch(mcfg.num_threads, device):
            set_dropout_generator(net, make_torch_generator(seed, name, "finest", "dropout",
                                                            device=device))
            opt = make_adam([p for p in net.parameters() if p.requires_grad], cfg.lr,
                            mcfg.weight_decay)
            loss_rng = make_rng(seed, name, "finest", "loss")
            top = torch.from_numpy(ref.top.astype(np.int64)).to(device)
            comp = torch.from_numpy(ref.comp.astype(np.int64)).to(device)
            for epoch in range(cfg.epochs or mcfg.epochs):
                tic, cpu = time.perf_counter(), time.process_time()
                net.train()
                sim = simulate(train, make_rng(seed, name, "finest", "simulate", epoch),
                               cfg.ratio, cfg.edits)
                data = model._make_data(sim)
                origin = match_rows(origin_log, sim)[data.rows]  # user-major pos -> anchor row
                order = data.order(mcfg.batch_order, make_rng(seed, name, "finest", "order",
                                                              epoch))
                total = torch.zeros((), dtype=torch.float64, device=device)
                reg_total = torch.zeros((), dtype=torch.float64, device=device)
                seen = kept = 0
                for lo in range(0, len(order), mcfg.batch_size):
                    ids = order[lo:lo + mcfg.batch_size]
                    batch = data.batch(ids, device, model.uses_time)
                    loss, logits, pos = instance_logits(model, net, data, ids, batch, loss_rng)
                    rows = np.where(pos >= 0, origin[np.maximum(pos, 0)], -1)
                    keep = np.flatnonzero((rows >= 0) & ref.has[np.maximum(rows, 0)])
                    seen, kept = seen + len(pos), kept + len(keep)
                    total += loss.detach() * len(ids)
                    if len(keep) and cfg.weight > 0:
                        r = torch.from_numpy(rows[keep]).to(device)
                        reg = rank_preserving_loss(
                            logits.index_select(0, torch.from_numpy(keep).to(device)),
                            top.index_select(0, r), comp.index_select(0, r), cfg.margin)
                        reg_total += reg.detach() * len(ids)
                        loss = loss + cfg.weight * reg
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                history.append({"epoch": epoch + 1, "phase": "finest",
                                "loss": float(total) / max(len(data), 1),
                                "rank_loss": float(reg_total) / max(len(data), 1),
                                "instances": kept / max(seen, 1),
                                "seconds": time.perf_counter() - tic,
                                "cpu_seconds": time.process_time() - cpu})
                progress.epoch(epoch + 1, cfg.epochs or mcfg.epochs)
            net.eval()
            set_dropout_generator(net, None)
        return history

    # ------------------------------------------------------------------ rank
    def score(self, queries: Queries | Interactions) -> np.ndarray:
        return self.model.score(queries)

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists:
        return self.model.rank(queries, k)


class _Clock:
    """``with clock(stage):`` adds the block's wall and process-CPU seconds to ``timing``."""

    def __init__(self, timing: dict[str, float]) -> None:
        self.timing = timing

    def __call__(self, stage: str) -> _Clock:
        self.stage = stage
        return self

    def __enter__(self) -> None:
        self.t0, self.c0 = time.perf_counter(), time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.timing[f"{self.stage}_seconds"] = time.perf_counter() - self.t0
        self.timing[f"{self.stage}_cpu_seconds"] = time.process_time() - self.c0


register_method("finest", FinestConfig, lambda make, config: Finest(make, stabilise=config),
                summary="rank-preserving fine-tuning under simulated perturbations "
                        "(Oh, Ustun, McAuley & Kumar 2024)")
