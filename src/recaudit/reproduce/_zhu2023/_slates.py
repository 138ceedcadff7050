"""Zhu et al. 2023 Figures 7 and 8: decoy slates, trained on unbiased and manipulative data."""

from __future__ import annotations

from typing import Any, Literal


from recaudit.reproduce._experiment import Claim, Experiment, Value
from recaudit.reproduce.rules import All, Contrast, Greater, Less, Rule
from recaudit.reproduce._zhu2023._common import NAME, PAPER, _mixes, measures, run_seeds, slope_rule

EXPERIMENTS: list[Experiment] = []  # in the order the report shows them

# ------------------------------------------------------------------------------ slates
MIXES = _mixes(0.1)  # the mix ratios plotted in Figures 7 and 8
SHOWN = _mixes(0.2)  # those listed in the report (the claims use all)
SLATE_SCALES: dict[str, dict[str, Any]] = {
    "small": {"seeds": 5, "epochs": 20, "train": 2000, "eval": 500,
              "note": "5 seeds (paper scale: 10), mix ratios 0, 0.1, ..., 1, 2,000 training and "
                      "500 evaluation slates, 20 epochs (the paper states neither seeds, data "
                      "sizes nor epochs)"},
    "paper": {"seeds": 10, "epochs": 20, "train": 2000, "eval": 500,
              "note": "10 seeds, mix ratios 0, 0.1, ..., 1 as plotted, 2,000 training and 500 "
                      "evaluation slates, 20 epochs (the paper states neither seeds, data sizes "
                      "nor epochs)"},
}


def _slate_config(scale: str, manipulative: Literal["decoy", "greedy"],
                  algorithms: tuple[str, ...], scope=None):
    from recaudit.simulate import MirrorConfig, TrainConfig

    s = SLATE_SCALES[scale]
    seeds = tuple(range(s["seeds"]))
    if scope is not None:
        _only_seeds(scope)
        seeds, _ = scope.take(seeds)
    return MirrorConfig(scenario="decoy-slate", mixes=MIXES,
                        seeds=seeds, algorithms=algorithms,
                        manipulative=manipulative, n_train=s["train"], n_eval=s["eval"],
                        train=TrainConfig(epochs=s["epochs"]))


def _trend_claims(algos, mixes, source) -> list[Claim]:
    return [Claim(f"{NAME[a]}: CTR rises and FCTR falls as the mix ratio of manipulative "
                  "training data grows (least-squares slopes over the mix ratios).", source,
                  All(slope_rule(a, "ctr", mixes, True), slope_rule(a, "fctr", mixes, False)))
            for a in algos]


def _beats(a: str, b: str, higher=("ctr",), lower=("fctr",)) -> Rule:
    """``a`` has a higher value than ``b`` on ``higher`` and a lower one on ``lower``."""
    return All(*(Greater(f"{a}/{m}", f"{b}/{m}") for m in higher),
               *(Less(f"{a}/{m}", f"{b}/{m}") for m in lower))


def _falls_further(a: str, b: str) -> Contrast:
    """``a``'s FCTR falls further than ``b``'s from mix 0 to mix 1."""
    return Contrast(((f"{a}/mix0/fctr", 1.0), (f"{a}/mix1/fctr", -1.0),
                     (f"{b}/mix0/fctr", -1.0), (f"{b}/mix1/fctr", 1.0)),
                    f"FCTR drop of {a} - FCTR drop of {b} > 0")


def _curve_values(algos, mixes, source) -> tuple[Value, ...]:
    return tuple(Value(f"{a}/mix{m:g}/{x}", f"{NAME[a]}, mix {m:g}: {x.upper()}", None, source,
                       also=(f"{a}/mix{m:g}/{x}/sd",))
                 for a in algos for m in mixes for x in ("ctr", "fctr"))


def _oracle_values(oracles, source) -> tuple[Value, ...]:
    return tuple(Value(f"{o}/{x}", f"{NAME[o]} Oracle: {x.upper()}", None, source,
                       also=(f"{o}/{x}/sd",)) for o in oracles for x in ("ctr", "fctr"))


def _only_seeds(scope) -> None:
    """Zhu et al. 2023's slate experiments take --seeds (or grow them until decided) and
    --no-train only: every algorithm and mix ratio shares each seed's simulated users."""
    from recaudit.errors import ConfigError

    if scope.draws is not None or scope.models is not None or scope.perturbations is not None:
        raise ConfigError("Zhu et al. 2023's slate experiments take --seeds, not --draws, "
                          "--models or --perturbations")


def _run_figure7(workdir, scale, workers, scope=None):
    return measures(run_seeds(workdir, _slate_config(scale, "decoy", ("DeepFM", "SetRank"),
                                                     scope), workers, train=_train(scope)))


def _train(scope) -> bool:
    return scope is None or scope.train



EXPERIMENTS.append(Experiment(
    name="zhu2023-figure7", paper=PAPER,
    title="Decoy slates: CTR and FCTR of DeepFM and SetRank over the mix ratio",
    artefacts="Figure 7",
    data="synthetic: §5.1 transportation documents (100 groups of d1-d4), RRM action model, "
         "slates of 3, Decoy Oracle vs Unbiased Oracle",
    scales={k: v["note"] for k, v in SLATE_SCALES.items()}, runner=_run_figure7,
    repeatable=True, grows="seeds",
    values=_oracle_values(("decoy", "unbiased"), "Figure 7 (dashed)")
    + _curve_values(("deepfm", "setrank"), SHOWN, "Figure 7"),
    claims=tuple(_trend_claims(("deepfm", "setrank"), MIXES, "§5.1.3; Figure 7")) + (
        Claim("At mix ratio 1.0 SetRank has a higher CTR and a lower FCTR than DeepFM.",
              "§5.1.3", _beats("setrank/mix1", "deepfm/mix1")),
        Claim("SetRank learns the manipulation more than DeepFM: its FCTR falls further from "
              "mix 0 to mix 1.", "§5.1.4", _falls_further("setrank", "deepfm")),
        Claim("The Decoy Oracle has a higher CTR and a lower FCTR than the Unbiased Oracle.",
              "§5.1.1; Figures 6-7", _beats("decoy", "unbiased"))),
    notes=("The Unbiased Oracle ranks every recall by initial preference; the paper's shows D3 "
           "or D4 at random for {d1, d3, d4} (see recaudit.simulate._decoy).",
           "The paper's sudden change of SetRank between mix 0.4 and 0.8 is not tested: it is "
           "a shape of one run, not a stated finding.")))


def _run_figure8(workdir, scale, workers, scope=None):
    return measures(run_seeds(workdir, _slate_config(scale, "greedy", F8_ALGOS, scope), workers,
                              train=_train(scope)))


F8_ALGOS = ("DeepFM", "LambdaFM", "SetRank")
_T1 = {"deepfm": (0.2010, 0.7467, 0.6602), "lambdafm": (0.2012, 0.7188, 0.6669),
       "setrank": (0.2031, 0.7293, 0.7054)}  # Table 1 (AICM, mix 0.5): CTR, FCTR, AUC
_T1_ORACLES = {"unbiased": (0.1961, 0.8383), "greedy": (0.2323, 0.5500)}
EXPERIMENTS.append(Experiment(
    name="zhu2023-figure8", paper=PAPER,
    title="Slates trained on Greedy-Oracle data (Figure 8's protocol on the RRM stand-in)",
    artefacts="Figure 8 (by direction), Table 1 (for scale)",
    data="stand-in: the §5.1 RRM documents and action model instead of AICM on TianGong-ST "
         "(not available offline); Greedy Oracle vs Unbiased Oracle",
    scales={k: v["note"] for k, v in SLATE_SCALES.items()}, runner=_run_figure8,
    repeatable=True, grows="seeds",
    values=tuple(Value(f"{o}/{x}", f"{NAME[o]} Oracle: {x.upper()} [paper: AICM]", v, "Table 1",
                       also=(f"{o}/{x}/sd",))
                 for o, vals in _T1_ORACLES.items() for x, v in zip(("ctr", "fctr"), vals))
    + tuple(Value(f"{a}/mix0.5/{x}", f"{NAME[a]}, mix 0.5: {x.upper()} [paper: AICM]", v,
                  "Table 1",
                  also=(f"{a}/mix0.5/{x}/sd",))
            for a, vals in _T1.items() for x, v in zip(("ctr", "fctr", "auc"), vals))
    + _curve_values(("deepfm", "lambdafm", "setrank"), SHOWN, "Figure 8(a)"),
    claims=tuple(_trend_claims(("deepfm", "lambdafm", "setrank"), MIXES, "§5.2.3; Figure 8(a)"))
    + (Claim("The Greedy Oracle has a higher CTR and a lower FCTR than the Unbiased Oracle.",
             "§5.2.3; Table 1", _beats("greedy", "unbiased")),
       Claim("At mix 0.5 SetRank has the highest online CTR and offline AUC of the three.",
             "§5.2.3; Table 1", All(*(_beats("setrank/mix0.5", f"{o}/mix0.5", ("ctr", "auc"),
                                             ()) for o in ("deepfm", "lambdafm")))),
       Claim("Stronger modelling, greater sensitivity: SetRank's FCTR falls further than "
             "DeepFM's from mix 0 to mix 1.", "§5.5.3", _falls_further("setrank", "deepfm"))),
    notes=("Figure 8 and Table 1 come from AICM (a GRU click model trained on TianGong-ST, "
           "35,000 queries of 10 documents, pages of 5); neither is available offline. We run "
           "the same protocol on the §5.1 RRM scenario (recalls of 3, slates of 3), so absolute "
           "levels are not comparable; Table 1's numbers are shown for scale only.",)))


# Table 3 and Figure 10 (the sequential scenario) are defined in their own module.
