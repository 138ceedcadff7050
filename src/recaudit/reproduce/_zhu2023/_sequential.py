"""Zhu et al. 2023, Table 3 and Figure 10: the synthetic sequential scenario (§5.3).

Training data: half of the users' sessions served by the Unbiased Oracle, half by the Planner
Oracle (mix ratio 0.5, "half of the data collected using Unbiased Oracle and the other half
collected using Planner Oracle"), each showing a random candidate 20 % of the time (without that
the logs never show most (user, topic) pairs; the paper does not mention exploration). DNN and GRU
(session click history) are trained on it with early stopping and interact with the same users
for 20 rounds. Measures as in :mod:`recaudit.reproduce._zhu2023`, plus

- ``crossing_round``: the first round from which the Planner's per-round CTR stays above the
  Unbiased Oracle's (Figure 10; the paper: round 10);
- ``ps_ratio``: Planner PS / Unbiased PS (the paper: 0.0203 / 0.0024 = 8.5, "an order of
  magnitude");
- ``seeds_gru_closer/<metric>``: the share of seeds in which GRU is on the Planner's side of DNN
  (higher CTR, PS, AUC; lower FCTR) -- how consistent Table 3's GRU-vs-DNN finding is here.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from typing import Any

import pandas as pd

from recaudit.reproduce._experiment import Claim, Experiment, Measures, Value
from recaudit.reproduce.rules import All, Greater, Less
from recaudit.reproduce._zhu2023._common import PAPER, ROUNDS, measures, run_seeds

EXPERIMENTS: list[Experiment] = []  # in the order the report shows them

MIX = 0.5
SCALES: dict[str, dict[str, Any]] = {
    "small": {"seeds": 10, "users": 1000,
              "note": "10 seeds, 1,000 users (training sessions come from the same users), "
                      "DNN/GRU with early stopping (at most 50 epochs, patience 3); the paper "
                      "states neither seeds, users nor epochs"},
    "paper": {"seeds": 10, "users": 2000,
              "note": "10 seeds, 2,000 users, early stopping (at most 50 epochs, patience 3); "
                      "the paper states neither seeds, users nor epochs"},
}
#: Table 3: offline AUC, CTR, FCTR, PS (after 20 rounds).
TABLE3 = {"dnn/mix0.5": (0.6193, 0.3725, 0.5283, 0.0074),
          "gru/mix0.5": (0.6226, 0.3827, 0.3195, 0.0140),
          "unbiased": (None, 0.3633, 0.6692, 0.0024),
          "planner": (None, 0.3860, 0.2801, 0.0203)}
TOL = {"auc": 0.03, "ctr": 0.03, "fctr": 0.05, "ps": 0.01}
CLOSER = {"ctr": 1, "ps": 1, "auc": 1, "fctr": -1}  # the Planner's side of DNN


def config(scale: str):
    from recaudit.simulate import MirrorConfig, TrainConfig

    s = SCALES[scale]
    return MirrorConfig(scenario="topic-sequential", mixes=(MIX,), seeds=tuple(range(s["seeds"])),
                        algorithms=("DNN", "GRU"), manipulative="planner", n_train=s["users"],
                        n_eval=s["users"], train=TrainConfig(epochs=50, patience=3),
                        explore=0.2)


def derived(rows: list[dict], m: Mapping[str, float]) -> dict[str, float]:
    """``crossing_round``, ``ps_ratio`` and ``seeds_gru_closer/*`` (module docstring)."""
    out: dict[str, float] = {}
    above = [m[f"planner/round{r:02d}/ctr"] > m[f"unbiased/round{r:02d}/ctr"]
             for r in range(1, ROUNDS + 1)]
    first = ROUNDS + 1
    for r in range(ROUNDS, 0, -1):
        if not above[r - 1]:
            break
        first = r
    out["crossing_round"] = float(first)
    if m["unbiased/ps"] > 0:
        out["ps_ratio"] = m["planner/ps"] / m["unbiased/ps"]
    per_seed: dict[tuple[str, str, int], float] = {
        (r["algorithm"], r["metric"], r["seed"]): r["value"] for r in rows
        if r["round"] is None and r["algorithm"] in ("DNN", "GRU")}
    seeds = sorted({s for _, _, s in per_seed})
    for metric, sign in CLOSER.items():
        wins = [sign * (per_seed[("GRU", metric, s)] - per_seed[("DNN", metric, s)]) > 0
                for s in seeds]
        out[f"seeds_gru_closer/{metric}"] = float(np.mean(wins))
    return out


def _gaps(rows: list[dict]) -> dict[str, pd.DataFrame]:
    """Per seed, ``gap/<algo>``: the mean absolute difference between the algorithm's and the
    Planner's per-round CTR over the 20 rounds (Figure 10's curves)."""
    ctr = {(r["algorithm"], r["seed"], r["round"]): r["value"] for r in rows
           if r["metric"] == "ctr" and r["round"] is not None}
    seeds = sorted({s for _, s, _ in ctr})
    out = {}
    for algo in ("DNN", "GRU"):
        vals = [float(np.mean([abs(ctr[(algo, s, r)] - ctr[("Planner Oracle", s, r)])
                               for r in range(1, ROUNDS + 1)])) for s in seeds]
        out[f"gap/{algo.lower()}"] = pd.DataFrame({"replicate": [str(s) for s in seeds],
                                                    "unit": "all", "value": vals})
    return out


def _run(workdir, scale, workers):
    rows = run_seeds(workdir, config(scale), workers)
    m = measures(rows)
    m.update(derived(rows, m))
    gaps = _gaps(rows)
    m.merge(Measures({k: float(v.value.mean()) for k, v in gaps.items()}, gaps))
    return m


def _values() -> tuple[Value, ...]:
    out = []
    names = {"dnn/mix0.5": "DNN", "gru/mix0.5": "GRU", "unbiased": "Unbiased Oracle",
             "planner": "Planner Oracle"}
    for k, vals in TABLE3.items():
        for metric, v in zip(("auc", "ctr", "fctr", "ps"), vals):
            if v is not None:
                out.append(Value(f"{k}/{metric}", f"{names[k]}: {metric.upper()}", v, "Table 3",
                                 tol=TOL[metric], also=(f"{k}/{metric}/sd",)))
    out.append(Value("crossing_round", "first round of Planner CTR > Unbiased CTR", 10.0,
                     "Figure 10 (§5.3.3 text)", tol=2.0))
    out.append(Value("ps_ratio", "Planner PS / Unbiased PS", 0.0203 / 0.0024, "Table 3",
                     tol=4.0))
    for metric in CLOSER:
        out.append(Value(f"seeds_gru_closer/{metric}",
                         f"share of seeds with GRU on the Planner's side of DNN: "
                         f"{metric.upper()}", None, "Table 3"))
    for k in ("dnn/mix0.5", "gru/mix0.5", "unbiased", "planner"):
        for r in (1, 10, 20):
            for metric in ("ctr", "ps"):
                out.append(Value(f"{k}/round{r:02d}/{metric}",
                                 f"{names[k]}, round {r}: {metric.upper()}", None, "Figure 10",
                                 also=(f"{k}/round{r:02d}/{metric}/sd",)))
    return tuple(out)


_GRU_VS_DNN = [
    Claim(f"GRU {'higher' if s > 0 else 'lower'} {m.upper()} than DNN (closer to the Planner).",
          "§5.3.3; Table 3", (Greater if s > 0 else Less)(f"gru/mix0.5/{m}", f"dnn/mix0.5/{m}"))
    for m, s in CLOSER.items()]


EXPERIMENTS.append(Experiment(
    name="zhu2023-table3", paper=PAPER,
    title="Sequential recommendation: Planner vs Unbiased Oracle, GRU vs DNN",
    artefacts="Table 3, Figure 10",
    data="synthetic: §5.3 topics (10 x 10 documents, hidden Gaussian quality by topic), time "
         "budget, RecSim interest evolution; 1 of 10 recalled documents shown for 20 rounds",
    scales={k: v["note"] for k, v in SCALES.items()}, runner=_run, values=_values(),
    claims=(
        Claim("The Planner Oracle has a higher CTR and a lower FCTR than the Unbiased Oracle.",
              "§5.3.3; Table 3", All(Greater("planner/ctr", "unbiased/ctr"),
                                     Less("planner/fctr", "unbiased/fctr"))),
        Claim("The Planner shifts preferences far more than the Unbiased Oracle (PS more than "
              "5 times as large; the paper: 8.5, 'an order of magnitude').", "§5.3.3; Table 3",
              Greater("planner/ps", "unbiased/ps", 5.0)),
        Claim("Per round, the Planner's CTR is below the Unbiased Oracle's at first and above it "
              "at the end (users stay longer).", "§5.3.3; Figure 10",
              All(Less("planner/round01/ctr", "unbiased/round01/ctr"),
                  Greater("planner/round20/ctr", "unbiased/round20/ctr"))),
        *_GRU_VS_DNN,
        Claim("GRU's per-round CTR curve is closer to the Planner's than DNN's (mean absolute "
              "difference over the 20 rounds, per seed).", "§5.3.3; Figure 10",
              Less("gap/gru", "gap/dnn"))),
    notes=(
        "GRU vs DNN, what we checked. (1) Trained for a fixed 20 epochs, GRU memorises the "
        "sessions' click histories: held-out log loss 0.68 -> 0.76 while the training loss falls "
        "to 0.59, held-out AUC below DNN's (0.50 vs 0.56). Early stopping fixes the fit; it does "
        "not change the online ordering. (2) GRU predicts clicks from 'this topic was clicked "
        "earlier in the session', which in logs of two sticky oracles stands in for the user's "
        "preference, and under-uses the profile u0: on an empty history the rank correlation of "
        "its scores with u0 is -0.04 to 0.15 (DNN 0.61-0.68), and online it shows topics with "
        "a mean u0 of 0.53-0.61 (DNN 0.72-0.83, Unbiased 0.86). Hence the paper's lower FCTR but a "
        "lower, not higher, CTR. (3) In our earlier quality-driven dynamics DNN gains CTR by "
        "learning the Planner's quality bias from the topic identity (rank correlation of its "
        "topic scores with topic quality 0.85), which GRU explains away by the history (0.02-0.2).",
        "The GRU-below-DNN CTR ordering held under every variant tried: quality-driven or "
        "RecSim preference drift, linear or proportional click model, 0 or 3 initial history "
        "documents, 0 or 20 % exploration, 150 to 2,000 users, 5 to 60 epochs or early "
        "stopping, weight decay up to 1e-2, hidden size 8 or 32, an additive history term; only "
        "weight decay 1e-2 brought the two level (0.510 vs 0.515).",
        "Scenario constants are ours (the paper prints none). Under RecSim's rules the oracles' "
        "CTR and FCTR land within 0.05 of Table 3, and the Planner overtakes the Unbiased Oracle "
        "per round near round 10 as in Figure 10; absolute PS is about 5-10x the paper's and "
        "the Planner/Unbiased ratio about 4, not 8.5. Under our earlier quality-driven drift "
        "the oracles' PS were 0.63 and 0.41.")))
