"""Layers over a leading member dimension: every sequential network is a stack of members.

A network of the sequential models holds the parameters of ``K`` members (trials) along a
leading dimension — an embedding table is ``[K, N, D]``, a linear layer's weight
``[K, out, in]`` — and computes all of them in one pass over inputs ``[K, ...]``. A model
trained alone is a stack of one (``K = 1``): there is one forward per model, and the
arithmetic a trial gets alone is the arithmetic it gets beside others.

A pass computes the members named by a :class:`Members` (all of them, or a group whose
mini-batches share a shape) with their dropout keys. What a member computes must not depend on
the other members of its pass, bit for bit (tested on the CPU, ``num_threads = 1``, for every
model and stack sizes up to 16):

- embedding look-ups gather from the members' tables as one table ``[K N, D]`` (member ``k``'s
  rows offset by ``k N``; the padding item reads a zero row and receives no gradient, as
  ``nn.Embedding(padding_idx=0)``); each member's gradient rows are accumulated in the order
  of its own look-ups;
- matrix products are batched products (``bmm`` / ``baddbmm``) whose slice ``k`` is the
  product of member ``k``'s own shapes;
- elementwise operations see a member's elements at the same places whatever the stack, or
  compute the same bits wherever an element sits (``tanh``, not ``sigmoid``: see
  :func:`_sigmoid`); a layer norm normalises every row at once and applies each member's
  affine map apart (its weight gradient reduces the member's own rows);
- dropout masks of all members are one counter-based draw (:mod:`._draws`);
- the scored rows of a member (its targets) are padded to a multiple of :data:`ROWS`, a count
  that depends on the member alone: members with as many padded rows share one output layer
  product and one cross-entropy, and the padding (ignored targets, zero gradients) adds the
  same to a member's sums whatever its neighbours;
- recurrent layers run on each member's fused kernel (``native``) or, batched, step by step
  over all members (:class:`Recurrent`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import torch
from torch import _VF, nn
from torch.nn import functional as F

from recaudit.models.sequential._draws import fmix32, keep_mask, threshold

__all__ = ["Members", "Embedding", "Linear", "LayerNorm", "Dropout", "Recurrent", "bmm_out",
           "RECURRENCES", "resolve_recurrence", "ROWS", "padded", "LINE", "LINE_ROWS",
           "lines", "pass_key", "gru_cell"]


class Members:
    """The members a pass computes, as positions in the stack (``index``; ``None``: all, in
    order), and their dropout: each member's key for the pass (``keys`` ``[K]`` int32,
    ``None``: no dropout, as in evaluation) and how many elements the pass has drawn so far
    (:mod:`._draws`)."""

    def __init__(self, index: Sequence[int] | None, keys: torch.Tensor | None,
                 device: torch.device | str | None = None, offset: int = 0) -> None:
        self.index = None if index is None else list(index)
        self.keys = keys
        self.offset = offset
        self._index_t = None if self.index is None else index_tensor(self.index, device)

    @classmethod
    def of(cls, net: nn.Module, index: Sequence[int] | None = None) -> Members:
        """Members ``index`` of ``net`` (all when ``None``); when the network has dropout
        generators (``set_dropout_generator``: fine-tuning a fitted model), each member's key
        for the pass is drawn from its generator."""
        first = next(net.parameters())
        if index is not None and list(index) == list(range(first.shape[0])):
            index = None                                 # all of them, in order
        gens = getattr(net, "generators", None)
        keys = None
        if gens is not None:
            if index is not None:
                gens = [gens[i] for i in index]
            keys = torch.cat([torch.randint(0, (1 << 31) - 1, (1,), generator=g,
                                            device=g.device, dtype=torch.int32) for g in gens])
        return cls(index, keys, first.device)

    @classmethod
    def step(cls, net: nn.Module, index: Sequence[int] | None, tag: int) -> Members:
        """Members ``index`` of ``net`` at a training step: each member's key is its own
        (``net.dropout_keys``) mixed with the step's ``tag`` (:func:`._draws.step_tag`)."""
        first = next(net.parameters())
        if index is not None and list(index) == list(range(first.shape[0])):
            index = None
        out = cls(index, None, first.device)
        member_keys = getattr(net, "dropout_keys", None)
        if member_keys is not None:
            out.keys = fmix32(out.take(member_keys) ^ tag)
        return out

    def sub(self, positions: Sequence[int]) -> Members:
        """The members at ``positions`` of this pass (a sub-group), as a pass of their own
        that goes on drawing where this one is."""
        index = [self.index[p] for p in positions] if self.index is not None \
            else list(positions)
        device = self._index_t.device if self._index_t is not None else \
            (self.keys.device if self.keys is not None else None)
        out = Members(index, None, device, self.offset)
        if self.keys is not None:
            out.keys = self.keys.index_select(0, index_tensor(positions, self.keys.device))
        return out

    def take(self, p: torch.Tensor) -> torch.Tensor:
        """Parameter ``p`` ``[K, ...]`` of this pass's members."""
        return p if self._index_t is None else p.index_select(0, self._index_t.to(p.device))

    def keep(self, shape: tuple[int, ...], cut: int, dtype: torch.dtype) -> torch.Tensor:
        """Each member's next dropout mask ``[K, *shape]``: ``1`` where the member's next 24-bit
        draws (:func:`._draws.member_bits`) are at least ``cut``, else ``0``
        (:func:`._draws.keep_mask`, the same draws computed in place)."""
        assert self.keys is not None
        mask = keep_mask(self.keys, self.offset, shape, cut, dtype)
        self.offset += mask[0].numel()
        return mask


def index_tensor(values: Sequence[int], device: torch.device | str | None) -> torch.Tensor:
    """``values`` as an index tensor on ``device``, made once per tuple and device (a pass
    over a group of members must not copy its index to an accelerator at every step: a copy
    from pageable host memory waits for the device)."""
    return _index_cached(tuple(values), str(device) if device is not None else "cpu")


@functools.lru_cache(maxsize=4096)
def _index_cached(values: tuple[int, ...], device: str) -> torch.Tensor:
    return torch.tensor(values, device=device)


def stacked(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """The tensors along a new leading dimension (one tensor: a view)."""
    return tensors[0].unsqueeze(0) if len(tensors) == 1 else torch.stack(list(tensors))


class Embedding(nn.Module):
    """``K`` embedding tables ``[K, num_embeddings, embedding_dim]`` (``padding_idx``: a zero
    row that receives no gradient, 0 for the padding item)."""

    def __init__(self, k: int, num_embeddings: int, embedding_dim: int,
                 padding_idx: int | None = None, device: torch.device | str = "meta") -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = padding_idx
        self.weight = nn.Parameter(torch.empty(k, num_embeddings, embedding_dim,
                                               device=device))

    def forward(self, idx: torch.Tensor, m: Members) -> torch.Tensor:
        """``table[k][idx[k]]`` for every member ``k``: ``[K, *idx.shape[1:], D]``."""
        weight = m.take(self.weight)
        k, n = weight.shape[:2]
        flat = idx
        if k > 1:
            offset = (torch.arange(k, device=idx.device) * n).view(-1, *([1] * (idx.dim() - 1)))
            flat = idx + offset
            if self.padding_idx is not None:  # the padding reads row 0 (zero, no gradient)
                flat = torch.where(idx == self.padding_idx, self.padding_idx, flat)
        return F.embedding(flat, weight.reshape(k * n, -1), padding_idx=self.padding_idx)


class Linear(nn.Module):
    """``K`` affine maps ``x[k] W[k]^T + b[k]`` (``W [K, out, in]``) as one batched product
    (``baddbmm`` over the flattened rows: what ``F.linear`` computes with ``addmm``)."""

    def __init__(self, k: int, in_features: int, out_features: int, bias: bool = True,
                 device: torch.device | str = "meta") -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = nn.Parameter(torch.empty(k, out_features, in_features, device=device))
        self.bias: nn.Parameter | None = \
            nn.Parameter(torch.empty(k, out_features, device=device)) if bias else None

    def bias_of(self, m: Members) -> torch.Tensor | None:
        """The biases ``[K, out]`` of members ``m`` (``None`` without)."""
        return None if self.bias is None else m.take(self.bias)

    def forward(self, x: torch.Tensor, m: Members) -> torch.Tensor:
        k, *mid, width = x.shape
        w = m.take(self.weight).transpose(1, 2)
        flat = x.reshape(k, -1, width)
        if self.bias is None:
            out = torch.bmm(flat, w)
        else:
            out = torch.baddbmm(m.take(self.bias).unsqueeze(1), flat, w)
        return out.view(k, *mid, out.shape[-1])


def bmm_out(h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """Scores ``h[k] W[k]^T (+ b[k])`` of an output layer: ``h [K, n, D]``, ``W [K, N, D]``."""
    scores = torch.bmm(h, weight.transpose(1, 2))
    return scores if bias is None else scores + bias.unsqueeze(1)


class LayerNorm(nn.Module):
    """``K`` layer norms over the last dimension (weights and biases ``[K, D]``): one
    normalisation of every row, then each member's affine map ``y ⊙ w[k] + b[k]`` (a member's
    weight gradient reduces its own rows)."""

    def __init__(self, k: int, dim: int, eps: float = 1e-5,
                 device: torch.device | str = "meta") -> None:
        super().__init__()
        self.dim, self.eps = dim, eps
        self.weight = nn.Parameter(torch.empty(k, dim, device=device))
        self.bias = nn.Parameter(torch.empty(k, dim, device=device))

    def forward(self, x: torch.Tensor, m: Members) -> torch.Tensor:
        shape = (x.shape[0],) + (1,) * (x.dim() - 2) + (self.dim,)
        y = F.layer_norm(x, (self.dim,), None, None, self.eps)
        return y * m.take(self.weight).view(shape) + m.take(self.bias).view(shape)


class Dropout(nn.Module):
    """Inverted dropout, every member's mask at once from its counter-based draws
    (:mod:`._draws`, ``Members.draw``): keep an element when its 24-bit draw is at least
    ``ceil(p 2^24)``."""

    def __init__(self, p: float) -> None:
        super().__init__()
        self.p = float(p)
        self.cut = threshold(self.p)

    def forward(self, x: torch.Tensor, m: Members) -> torch.Tensor:
        if not self.training or self.p <= 0.0 or m.keys is None:
            return x
        keep = m.keep(tuple(x.shape[1:]), self.cut, x.dtype)   # 0 / 1, as x * bool gives
        return torch.mul(x, keep).div_(1.0 - self.p)


#: scored rows (targets) of a member are padded to a multiple of this (:func:`padded`)
ROWS = 64


def padded(n: int) -> int:
    """``n`` scored rows padded to a multiple of :data:`ROWS`: a member's output layer and loss
    run over this many rows (the padding's targets ignored), a number that depends on the
    member alone, so members whose counts pad alike run as one batched product, and what
    the padding adds to a member's sums (zeros) never depends on its neighbours."""
    return -(-n // ROWS) * ROWS


#: bytes of the boundary a tensor of its own starts on (torch's CPU allocator aligns to 64
#: bytes, CUDA's to more), and every member's part of a stacked tensor should start on too:
#: a matrix product's sums can depend on where its operands start (MKL takes the elements
#: before an alignment boundary apart: measured for products of a few rows; issue 61). A
#: member's block of a parameter ``[K, ...]`` starts on a line when the parameter's size per
#: member is a multiple of 16 floats: widths that are multiples of 16, as every default and
#: preset has; with others (SASRec or JODIE of width 10: measured) a stack's member can end
#: a few last bits away from the model alone on such a CPU
LINE = 64
#: float32 rows of width one that fill whole lines: a member's part of a ``[K', n, w]`` tensor
#: starts on a line, whatever ``w``, when ``n`` is a multiple of this
LINE_ROWS = LINE // 4


def lines(n: int) -> int:
    """``n`` rows padded to a multiple of :data:`LINE_ROWS` (JODIE's loss passes: a member's
    rows there, its padding rows read zeros and add nothing)."""
    return -(-n // LINE_ROWS) * LINE_ROWS


def pass_key(n: int, member: int) -> int | tuple[int, int]:
    """The pass a member whose group at a step has ``n`` rows, unpadded, joins (LatentCross
    over whole histories): the members with as many rows when ``n`` is a multiple of
    :data:`LINE_ROWS`, whose parts then start on lines; else a pass of its own."""
    return n if n % LINE_ROWS == 0 else (n, member)


#: how a stack's GRUs and LSTMs run (the models' ``recurrence`` parameter)
RECURRENCES = ("auto", "native", "batched")


def resolve_recurrence(recurrence: str, device: torch.device) -> str:
    """``"native"`` or ``"batched"`` for ``recurrence`` on ``device``: ``"auto"`` is batched on
    CUDA (one kernel per step for the whole stack instead of a cuDNN call per member) and
    native on the CPU (the fused kernel: the faster there, measured for a model alone). The
    choice never depends on the stack's size, so a trial's numbers do not either."""
    if recurrence == "auto":
        return "batched" if device.type == "cuda" else "native"
    return recurrence


def _sigmoid(x: torch.Tensor) -> torch.Tensor:
    """``σ(x) = (tanh(x / 2) + 1) / 2``. torch's CPU ``sigmoid`` (and its backward) computes the
    elements of a vector's tail with other instructions than the rest, so an element's bits
    would depend on where it sits in a batched tensor, that is on the stack's size; ``tanh``'s
    do not (tested), and halving and the affine map are exact."""
    return (torch.tanh(x * 0.5) + 1.0) * 0.5


def gru_cell(gi: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor,
             b_hh: torch.Tensor | None) -> torch.Tensor:
    """One step of every member's GRU (:class:`Recurrent`'s batched recurrence): ``gi [K, B,
    3H]`` the input projections (``b_ih`` included), ``h [K, B, H]`` the states, ``w_hh [K, H,
    3H]`` (transposed), ``b_hh [K, 1, 3H]`` or ``None``; the new states ``[K, B, H]``."""
    hid = h.shape[-1]
    gh = torch.baddbmm(b_hh, h, w_hh) if b_hh is not None else torch.bmm(h, w_hh)
    rz = _sigmoid(gi[..., :2 * hid] + gh[..., :2 * hid])
    n = torch.tanh(gi[..., 2 * hid:] + rz[..., :hid] * gh[..., 2 * hid:])
    return n + rz[..., hid:] * (h - n)


def _gate_scale(mode: str, hid: int, like: torch.Tensor) -> torch.Tensor:
    """The LSTM's gate pre-activations' scale before one ``tanh``: ``1/2`` for ``i, f, o``
    (their σ, :func:`_sigmoid`), 1 for ``g``."""
    scale = like.new_full((4 * hid,), 0.5)
    if mode == "LSTM":
        scale[2 * hid:3 * hid] = 1.0
    return scale


class Recurrent(nn.Module):
    """``K`` GRUs or LSTMs (``mode``), batch first, parameters named as ``nn.GRU`` /
    ``nn.LSTM`` name theirs (``weight_ih_l0 [K, gates H, in]``, ...), gates in PyTorch's order
    (GRU: ``r, z, n``; LSTM: ``i, f, g, o``).

    ``recurrence`` (:func:`resolve_recurrence`): ``"native"`` runs each member on its own fused
    kernel (``torch._VF.gru`` / ``lstm``, what ``nn.GRU`` calls: cuDNN, oneDNN or ATen's);
    ``"batched"`` runs every member at once, step by step: the input projections of all steps
    as one batched product, then per step one batched product ``h W_hh^T`` over the members
    and the gates elementwise::

        GRU:   r, z = σ(x W_ir + b_ir + h W_hr + b_hr), σ(... z ...)
               n = tanh(x W_in + b_in + r ⊙ (h W_hn + b_hn));   h' = n + z ⊙ (h - n)
        LSTM:  i, f, o = σ(...), g = tanh(...);   c' = f ⊙ c + i ⊙ g;   h' = o ⊙ tanh(c')

    with ``σ(x) = (tanh(x/2) + 1)/2`` (:func:`_sigmoid`: what makes an element's bits
    independent of its place in the batched tensor on the CPU). Both are exact per member (a
    member's numbers do not depend on its neighbours); they are different arithmetic, so a
    model's numbers differ between the two in the last bits.
    """

    def __init__(self, mode: str, k: int, input_size: int, hidden_size: int,
                 num_layers: int = 1, bias: bool = True, recurrence: str = "auto",
                 device: torch.device | str = "meta") -> None:
        super().__init__()
        if mode not in ("GRU", "LSTM"):
            raise ValueError(f"mode must be 'GRU' or 'LSTM', got {mode!r}")
        if recurrence not in RECURRENCES:
            raise ValueError(f"recurrence must be one of {RECURRENCES}, got {recurrence!r}")
        self.mode, self.hidden_size, self.num_layers, self.bias = mode, hidden_size, \
            num_layers, bias
        self.recurrence = recurrence
        self.gates = 3 if mode == "GRU" else 4
        self._names: list[str] = []
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size
            shapes: dict[str, tuple[int, ...]] = {
                f"weight_ih_l{layer}": (self.gates * hidden_size, width),
                f"weight_hh_l{layer}": (self.gates * hidden_size, hidden_size)}
            if bias:
                shapes |= {f"bias_ih_l{layer}": (self.gates * hidden_size,),
                           f"bias_hh_l{layer}": (self.gates * hidden_size,)}
            for name, shape in shapes.items():
                setattr(self, name, nn.Parameter(torch.empty(k, *shape, device=device)))
                self._names.append(name)

    def weights(self, m: Members) -> list[list[torch.Tensor]]:
        """Each member's flat weights, in ``nn.GRU``'s order."""
        per_param = [m.take(getattr(self, n)).unbind(0) for n in self._names]
        return [list(ws) for ws in zip(*per_param, strict=True)]

    def forward(self, x: torch.Tensor, m: Members) -> torch.Tensor:
        """Outputs ``[K, B, L, H]`` of inputs ``x [K, B, L, in]`` from zero states."""
        if resolve_recurrence(self.recurrence, x.device) == "batched":
            return self._batched(x, m)
        outs = []
        for xk, weights in zip(x.unbind(0), self.weights(m), strict=True):
            hx = xk.new_zeros(self.num_layers, xk.shape[0], self.hidden_size)
            if self.mode == "GRU":
                out = _VF.gru(xk, hx, weights, self.bias, self.num_layers, 0.0, self.training,
                              False, True)[0]
            else:
                out = _VF.lstm(xk, (hx, torch.zeros_like(hx)), weights, self.bias,
                               self.num_layers, 0.0, self.training, False, True)[0]
            outs.append(out)
        return stacked(outs)

    def _batched(self, x: torch.Tensor, m: Members) -> torch.Tensor:
        k, b, length, _ = x.shape
        hid = self.hidden_size
        out = x
        for layer in range(self.num_layers):
            w_ih = m.take(getattr(self, f"weight_ih_l{layer}")).transpose(1, 2)
            w_hh = m.take(getattr(self, f"weight_hh_l{layer}")).transpose(1, 2)
            flat = out.reshape(k, b * length, -1)
            if self.bias:
                b_ih = m.take(getattr(self, f"bias_ih_l{layer}")).unsqueeze(1)
                b_hh = m.take(getattr(self, f"bias_hh_l{layer}")).unsqueeze(1)
                proj = torch.baddbmm(b_ih, flat, w_ih)
            else:
                proj = torch.bmm(flat, w_ih)
            gi = proj.view(k, b, length, -1).unbind(2)     # each step's input projection
            h = x.new_zeros(k, b, hid)
            c = x.new_zeros(k, b, hid)
            scale = _gate_scale(self.mode, hid, x)
            steps = []
            for t in range(length):
                if self.mode == "GRU":
                    h = gru_cell(gi[t], h, w_hh, b_hh if self.bias else None)
                else:
                    gh = torch.baddbmm(b_hh, h, w_hh) if self.bias else torch.bmm(h, w_hh)
                    act = torch.tanh((gi[t] + gh) * scale)   # g's tanh; σ of i, f, o below
                    gate = (act + 1.0) * 0.5
                    c = gate[..., hid:2 * hid] * c + gate[..., :hid] * act[..., 2 * hid:3 * hid]
                    h = gate[..., 3 * hid:] * torch.tanh(c)
                steps.append(h)
            out = torch.stack(steps, dim=2)
        return out
