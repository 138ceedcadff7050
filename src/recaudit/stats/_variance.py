"""Where the variation of an audit measure comes from: the variance components of seeds,
perturbation draws, test queries and the rest, by the method of moments
(:func:`variance_parts`; the maths in its docstring). The means' intervals are
:mod:`recaudit.stats._estimate`'s; this is what they are made of, for ``results --variance``
and the report's "Where the variation comes from"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from recaudit.stats._estimate import _codes

__all__ = ["VarianceParts", "variance_parts"]


@dataclass(frozen=True)
class VarianceParts:
    """Where the variation of a measure comes from (:func:`variance_parts`): the variance
    components of ``seed`` (between training seeds), ``draw`` (between perturbation draws of
    one seed), ``query`` (between test queries) and ``residual`` (everything else: a query's
    response to one seed, noise), with the counts they were estimated from."""

    seed: float
    draw: float
    query: float
    residual: float
    seeds: int
    draws: int
    queries: int

    @property
    def total(self) -> float:
        return self.seed + self.draw + self.query + self.residual

    def shares(self) -> dict[str, float]:
        """Each component's share of one measurement's variance (they sum to 1)."""
        t = self.total
        names = ("seed", "draw", "query", "residual")
        return {n: (getattr(self, n) / t if t > 0 else float("nan")) for n in names}

    def mean_shares(self) -> dict[str, float]:
        """Each component's share of the *mean's* sampling variance at these counts
        (``seed / S``, ``draw / (S D)``, ``query / Q``, ``residual / (S D Q)``): what an
        interval's width is made of, and what more seeds or draws would shrink."""
        s, d, q = self.seeds, self.draws, self.queries
        parts = {"seed": self.seed / s, "draw": self.draw / (s * d), "query": self.query / q,
                 "residual": self.residual / (s * d * q)}
        t = sum(parts.values())
        return {n: (v / t if t > 0 else float("nan")) for n, v in parts.items()}


def variance_parts(values, seeds, draws=None, units=None) -> VarianceParts:
    """The variance components of ``values`` measured on every (seed, draw, query) cell of a
    crossed design (the audit's: every test query in every trial), by the method of moments
    of the balanced random-effects model ``y = mu + a[seed] + c[seed, draw] + b[query] + e``
    (draws nested in seeds, queries crossed with both):

        E[MS_seed]  = s_e^2 + Q s_c^2 + D Q s_a^2     (df S - 1)
        E[MS_draw]  = s_e^2 + Q s_c^2                 (df S (D - 1))
        E[MS_query] = s_e^2 + S D s_b^2               (df Q - 1)
        E[MS_res]   = s_e^2                           (df (S D - 1)(Q - 1))

    each solved for its component and floored at 0 (a negative estimate is a component too
    small to see). With one draw per seed the draw component is 0 (it cannot be told from the
    seed's); with one seed the seed component is 0 and unmeasured. Only the queries present
    in every (seed, draw) are read, so that the design is balanced. NaN values are left out."""
    y = np.asarray(values, dtype=np.float64).ravel()
    s_codes, n_s = _codes(np.asarray(seeds).ravel())
    d_codes, n_d = _codes(np.zeros(len(y), np.int64) if draws is None
                          else np.asarray(draws).ravel())
    u_codes, n_u = _codes(np.arange(len(y)) if units is None else np.asarray(units).ravel())
    if not len(y) == len(s_codes) == len(d_codes) == len(u_codes):
        raise ValueError("values, seeds, draws and units must have one entry each")
    cube = np.full((n_s, n_d, n_u), np.nan)
    cube[s_codes, d_codes, u_codes] = y
    # draws of each seed renumbered 0.. (a seed's draws need not share numbers): keep the
    # (seed, draw) slices that hold values, as many per seed as the fewest seed has
    held = ~np.all(np.isnan(cube), axis=2)
    per_seed = held.sum(axis=1)
    n_draws = int(per_seed[per_seed > 0].min()) if (per_seed > 0).any() else 0
    slices = np.stack([cube[i, np.flatnonzero(held[i])[:n_draws]] for i in range(n_s)
                       if per_seed[i] > 0]) if n_draws else np.empty((0, 0, n_u))
    complete = ~np.isnan(slices).any(axis=(0, 1)) if slices.size else np.zeros(n_u, bool)
    x = slices[:, :, complete]
    S, D, Q = x.shape if x.size else (0, 0, 0)
    if S * D * Q < 2 or Q < 2:
        return VarianceParts(0.0, 0.0, 0.0, 0.0, S, D, Q)
    grand = x.mean()
    m_s = x.mean(axis=(1, 2))
    m_sd = x.mean(axis=2)
    m_q = x.mean(axis=(0, 1))
    ss_s = D * Q * float(((m_s - grand) ** 2).sum())
    ss_d = Q * float(((m_sd - m_s[:, None]) ** 2).sum())
    ss_q = S * D * float(((m_q - grand) ** 2).sum())
    ss_res = float(((x - grand) ** 2).sum()) - ss_s - ss_d - ss_q
    ms_res = ss_res / ((S * D - 1) * (Q - 1)) if S * D > 1 else float(x.var(ddof=1))
    ms_q = ss_q / (Q - 1)
    query = max(0.0, (ms_q - ms_res) / (S * D)) if S * D > 1 else 0.0
    residual = max(0.0, ms_res)
    if S * D == 1:  # one trial: queries and noise cannot be told apart
        return VarianceParts(0.0, 0.0, float(x.var(ddof=1)), 0.0, S, D, Q)
    ms_d = ss_d / (S * (D - 1)) if D > 1 else None
    draw = max(0.0, (ms_d - ms_res) / Q) if ms_d is not None else 0.0
    if S > 1:
        ms_s = ss_s / (S - 1)
        seed = max(0.0, (ms_s - (ms_d if ms_d is not None else ms_res)) / (D * Q))
    else:
        seed = 0.0
    return VarianceParts(seed, draw, query, residual, S, D, Q)
