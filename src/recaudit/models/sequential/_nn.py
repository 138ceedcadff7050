"""Deterministic torch building blocks shared by the neural models.

Nothing here touches torch's global random state:

- networks are *built on the meta device* (no parameter memory, no draws from the global
  generator) with the parameters of ``K`` members along a leading dimension
  (:mod:`recaudit.models.sequential._stack`), then materialised with :func:`materialize`, which
  fills every member's parameters from that member's explicit ``torch.Generator``;
- dropout masks are hashes of counters keyed per member (:mod:`._draws`): by the member's seed
  and step while it trains, by a key drawn from an explicit generator when a fitted model is
  fine-tuned (``set_dropout_generator``);
- :func:`deterministic_torch` (from :mod:`recaudit._torch`, shared with MIRROR's algorithms)
  switches on ``torch.use_deterministic_algorithms(True)`` and a fixed intra-op thread count
  for the duration of ``fit``/``rank`` and restores both afterwards.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any, TypeVar

import torch
from torch import nn

from recaudit._torch import deterministic_torch
from recaudit.models.sequential import _stack as stk

__all__ = ["SequenceNet", "StackAdam", "required", "deterministic_torch", "materialize",
           "init_normal", "init_uniform", "make_adam", "set_dropout_generator"]


M = TypeVar("M", bound=nn.Module)


class SequenceNet(nn.Module):
    """Base of the sequential models' networks, each a stack of members (see
    :class:`~recaudit.models.sequential.SequentialRecommender` and
    :mod:`~recaudit.models.sequential._stack`): ``forward(batch, members)`` gives the
    per-position trunk ``[K, B, L, D]`` of a stacked batch, an optional ``head(h, members)``
    the scored positions' representation, :meth:`output` the output layer; ``embedding`` is the
    item embedding. A trained model's network is a stack of one."""

    embedding: stk.Embedding
    #: each member's dropout generator (``None``: none), :func:`set_dropout_generator`
    generators: list[torch.Generator] | None = None
    #: each member's dropout key while it trains in a stack (``None``: none; int32 ``[K]``)
    dropout_keys: torch.Tensor | None = None

    def output(self, m: stk.Members) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The output layer of members ``m``: ``(W [K, n_items, D], b [K, n_items] | None)``,
        scores ``h W^T (+ b)``."""
        raise NotImplementedError(f"{type(self).__name__} has no softmax output layer")

    @property
    def size(self) -> int:
        """The number of members."""
        return next(self.parameters()).shape[0]

    def member(self, k: int, *, share: bool = False) -> SequenceNet:
        """Member ``k`` as a network of its own (a stack of one): its parameters copied, or
        with ``share`` views of this network's (for reading: evaluation, validation)."""
        memo: dict[int, Any] = {id(self.generators): None, id(self.dropout_keys): None}
        with torch.no_grad():   # a slice made without grad is already detached
            for p in self.parameters():
                part = p[k:k + 1]
                memo[id(p)] = nn.Parameter(part if share else part.clone(),
                                           requires_grad=p.requires_grad)
        return copy.deepcopy(self, memo)

    def member_state(self, k: int) -> dict:
        """A copy of member ``k``'s state (a stack of one's ``state_dict``)."""
        return {name: v.detach()[k:k + 1].clone() for name, v in self.state_dict().items()}

    def load_member_state(self, k: int, state: dict) -> None:
        """Set member ``k``'s state to ``state`` (a :meth:`member_state`)."""
        with torch.no_grad():
            for name, v in self.state_dict().items():
                v[k:k + 1].copy_(state[name])


def required(value: torch.Tensor | None, what: str) -> torch.Tensor:
    """``value``, which the caller's batch must carry (``what`` names it in the error)."""
    if value is None:
        raise ValueError(f"this batch carries no {what}; build it with the model's time "
                         "features / targets (SequenceData, batch_from_queries)")
    return value


def make_adam(params, lr: float, weight_decay: float) -> torch.optim.Adam:
    """Adam with L2 weight decay, the fused single-kernel implementation (CPU and CUDA).

    Same update as ``torch.optim.Adam``'s loop implementation (floats may differ in the last
    bits); deterministic; about 4x faster per step on the CPU for large embedding tables.
    """
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)


class StackAdam:
    """Adam for a stacked network: member ``k``'s slice of every parameter keeps its own
    moments and step count and is updated only at steps where the member trained and the
    parameter had a gradient — exactly what ``make_adam`` (torch's fused Adam) does for the
    member's parameters alone: the same kernel (``torch._fused_adam_``) on tensors of the same
    size, one call for every member of a step.

    A stack of one hands its parameters and fresh gradients to the kernel as they are (no
    copy, no extra pass). A larger stack accumulates gradients into buffers kept from step to
    step (zeroed by :meth:`zero_grad`), so the members' slices of every buffer are made once;
    its post-accumulate hooks tell which parameters a backward pass reached (a parameter the
    pass did not reach, JODIE's initial vectors after an epoch's first group, is left as it is,
    as torch's Adam leaves a parameter without a gradient)."""

    def __init__(self, net: nn.Module, lr: float, weight_decay: float,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8) -> None:
        self.lr, self.weight_decay, self.betas, self.eps = lr, weight_decay, betas, eps
        self.params = [p for p in net.parameters() if p.requires_grad]
        self.detached = [p.detach() for p in self.params]   # what the kernel updates in place
        n = len(self.params)
        self.size = self.params[0].shape[0] if self.params else 0
        self.reached = [False] * n
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]
        # every member's step count of every parameter: 0-d views of one tensor [K, n]
        counts = torch.zeros(self.size * n, dtype=torch.float32,
                             device=self.params[0].device if n else None).unbind(0)
        self.steps = [list(counts[j * n:(j + 1) * n]) for j in range(self.size)]
        self.grads: list[torch.Tensor] = []
        if self.size > 1:
            for i, p in enumerate(self.params):
                p.grad = torch.zeros_like(p)
                self.grads.append(p.grad)
                p.register_post_accumulate_grad_hook(lambda _, i=i: self._reach(i))
            # each member's slices, one unbind per tensor (views: the kernel updates in place)
            cols = [tuple(t.unbind(0) for t in (d, g, m, v)) for d, g, (m, v)
                    in zip(self.detached, self.grads, self.moments, strict=True)]
            self.slices = [[(d[j], g[j], m[j], v[j]) for d, g, m, v in cols]
                           for j in range(self.size)]

    def state(self) -> dict[str, Any]:
        """A copy of every member's moments and step counts (what :meth:`load_state` sets)."""
        return {"moments": [(m.clone(), v.clone()) for m, v in self.moments],
                "steps": torch.stack([torch.stack(row) for row in self.steps])
                if self.params else torch.zeros(0)}

    @torch.no_grad()
    def load_state(self, state: dict[str, Any]) -> None:
        """Set the moments and step counts to ``state`` (a :meth:`state`), in place (the
        members' slices stay views of them)."""
        for (m, v), (m2, v2) in zip(self.moments, state["moments"], strict=True):
            m.copy_(m2)
            v.copy_(v2)
        for j, row in enumerate(self.steps):
            for i, count in enumerate(row):
                count.copy_(state["steps"][j, i])

    def _reach(self, i: int) -> None:
        self.reached[i] = True

    def zero_grad(self) -> None:
        if self.size > 1:
            torch._foreach_zero_(self.grads)
            self.reached = [False] * len(self.params)
        else:
            for p in self.params:
                p.grad = None

    @torch.no_grad()
    def step(self, members: Sequence[int]) -> None:
        """Update ``members`` (stack positions) where the last backward pass reached."""
        if self.size == 1:
            parts = [(d, p.grad, m, v, self.steps[0][i])
                     for i, (p, d, (m, v)) in enumerate(zip(self.params, self.detached,
                                                             self.moments, strict=True))
                     if p.grad is not None]
        else:
            parts = [(*self.slices[j][i], self.steps[j][i]) for j in members
                     for i in range(len(self.params)) if self.reached[i]]
        if not parts:
            return
        params, grads, exp_avgs, exp_avg_sqs, steps = (list(t) for t in zip(*parts))
        torch._foreach_add_(steps, 1)
        torch._fused_adam_(params, grads, exp_avgs, exp_avg_sqs, [], steps, amsgrad=False,
                           lr=self.lr, beta1=self.betas[0], beta2=self.betas[1],
                           weight_decay=self.weight_decay, eps=self.eps, maximize=False,
                           grad_scale=None, found_inf=None)


def set_dropout_generator(net: SequenceNet,
                          generator: torch.Generator | Sequence[torch.Generator] | None) -> None:
    """The dropout generators of ``net``'s members: one per member (a single one for a stack
    of one); ``None``: no dropout. Each training pass draws a member's dropout key from its
    generator (:meth:`._stack.Members.of`); the training loop keys its members by their
    seeds and steps instead (:meth:`._stack.Members.step`)."""
    gens = None if generator is None else [generator] \
        if isinstance(generator, torch.Generator) else list(generator)
    net.generators = gens


def init_normal(shape: tuple[int, ...], std: float, g: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=g) * std


def init_uniform(shape: tuple[int, ...], bound: float, g: torch.Generator) -> torch.Tensor:
    return (torch.rand(shape, generator=g) * 2.0 - 1.0) * bound


def materialize(module: M, generators: Sequence[torch.Generator], device: torch.device,
                rule=None, style: str = "default") -> M:
    """Allocate a meta-device stacked ``module`` on ``device`` and initialise member ``k``'s
    parameters from ``generators[k]`` (one per member).

    Default rule, by parameter name (visited in ``named_parameters`` order, so the draws are
    reproducible; shapes are a member's, without the leading member dimension): biases -> 0;
    ``LayerNorm`` weights -> 1; embeddings -> N(0, 1/d) (padding row 0); other matrices ->
    Xavier-uniform ``U(-b, b)``, ``b = sqrt(6 / (fan_in + fan_out))`` (for stacked RNN weights
    the fan is per gate). ``style="torch"``: PyTorch's own defaults instead — ``Linear`` weight
    and bias U(±1/√in_features), RNN weights and biases U(±1/√hidden), ``Embedding`` N(0, 1)
    with a zero padding row, ``LayerNorm`` ones and zeros (parameters of other modules keep the
    default rule). ``rule(name, shape, g)`` may return a tensor to override either for a
    parameter (or ``None``).

    Each member's generator is its own (one object per member): the parameters are filled one
    at a time, every member's value drawn in turn and stacked into the parameter in one
    operation (a constant, layer norm weights and biases, in one fill), so a member's draws
    are those it makes alone while the operations do not grow with members x parameters.
    """
    module = module.to_empty(device="cpu")
    norms = {id(m.weight) for m in module.modules() if isinstance(m, stk.LayerNorm)}
    rnns = {id(p): m.gates for m in module.modules() if isinstance(m, stk.Recurrent)
            for p in m.parameters()}
    embeds = {id(m.weight): m.padding_idx for m in module.modules()
              if isinstance(m, stk.Embedding)}
    with torch.no_grad():
        # parameter by parameter, member by member: each member's generator still meets the
        # parameters in named_parameters order (the draws of a member are its own)
        for name, p in module.named_parameters():
            shape = tuple(p.shape[1:])
            values = []
            for g in generators:
                value = rule(name, shape, g) if rule is not None else None
                if value is None and style == "torch":
                    value = _torch_default(_owner(module, name), name, shape, g)
                if value is None:
                    value = _default(name, p, shape, g, norms, rnns, embeds)
                values.append(value)
            if all(isinstance(v, float) for v in values) and len(set(values)) == 1:
                p.fill_(values[0])                        # ones or zeros: one fill
            else:
                torch.stack([torch.full(shape, v) if isinstance(v, float) else v.to(p.dtype)
                             for v in values], out=p)
        for b in module.buffers():
            b.zero_()
    return module.to(device)


def _default(name: str, p: torch.Tensor, shape: tuple[int, ...], g: torch.Generator,
             norms: set[int], rnns: dict[int, int], embeds: dict[int, int | None]
             ) -> torch.Tensor | float:
    """The default rule's value of a member's parameter (:func:`materialize`); a constant as
    a float (layer norm weights 1, biases 0)."""
    if id(p) in norms:
        return 1.0
    if name.endswith("bias") or "bias_" in name.rsplit(".", 1)[-1] or len(shape) == 1:
        return 0.0
    if id(p) in embeds:
        value = init_normal(shape, 1.0 / math.sqrt(shape[-1]), g)
        if embeds[id(p)] is not None:
            value[embeds[id(p)]] = 0.0
        return value
    fan_out, fan_in = shape[0], math.prod(shape[1:])
    fan_out //= rnns.get(id(p), 1)  # RNN gates stacked along dim 0
    return init_uniform(shape, math.sqrt(6.0 / (fan_in + fan_out)), g)


def _torch_default(owner: nn.Module, name: str, shape: tuple[int, ...], g: torch.Generator):
    """PyTorch's default initialisation of ``owner``'s parameter (``None``: not covered)."""
    if isinstance(owner, stk.Linear):
        return init_uniform(shape, 1.0 / math.sqrt(owner.in_features), g)
    if isinstance(owner, stk.Recurrent):
        return init_uniform(shape, 1.0 / math.sqrt(owner.hidden_size), g)
    if isinstance(owner, stk.Embedding):
        w = torch.randn(shape, generator=g)
        if owner.padding_idx is not None:
            w[owner.padding_idx] = 0.0
        return w
    if isinstance(owner, stk.LayerNorm):
        return torch.ones(shape) if name.endswith("weight") else torch.zeros(shape)
    return None


def _owner(root: nn.Module, param_name: str) -> nn.Module:
    mod = root
    for part in param_name.split(".")[:-1]:
        mod = getattr(mod, part)
    return mod
