"""Oh et al. 2022 Tables 3 and 4: perturbation methods, and the cascading effect."""

from __future__ import annotations

from recaudit.reproduce._experiment import Claim, Experiment, Value
from recaudit.reproduce._oh2022 import _common as common
from recaudit.reproduce._oh2022._common import LOO, MODELS, PAPER, REPLACE, SCALES
from recaudit.reproduce.rules import (All, AnyOf, Bound, Greater, among_lowest, lowest,
                                      ordered)

EXPERIMENTS: list[Experiment] = []  # in the order the report shows them

# ------------------------------------------------------------------------------ Table 3
_T3A = {  # Table 3(a): LOO, RBO (= average overlap), Foursquare, mean of 3 repetitions
    "random-delete": (0.7799, 0.9117, 0.8316, 0.9335),
    "earliest-random-delete": (0.7876, 0.8776, 0.8211, 0.8563),
    "latest-random-delete": (0.7763, 0.8515, 0.8420, 0.9608),
    "tracin-delete": (0.7733, 0.8545, 0.8713, 0.9625),
    "rev-adv-random-delete": (0.7798, 0.8955, 0.8491, 0.9317),
    "rev-adv-earliest-delete": (0.7787, 0.8911, 0.7185, 0.7403),
    "casper-delete": (0.7709, 0.8450, 0.7896, 0.6662)}
_T3B = {  # Table 3(b): item replacement
    "random-replace-random": (0.7795, 0.9143, 0.9414, 0.9493),
    "earliest-random-replace-random": (0.7743, 0.8886, 0.8871, 0.8421),
    "latest-random-replace-random": (0.7814, 0.8553, 0.8989, 0.9850),
    "tracin-replace-random": (0.7934, 0.8520, 0.9280, 0.9696),
    "rev-adv-random-replace-random": (0.7856, 0.8782, 0.9159, 0.9538),
    "rev-adv-earliest-replace-random": (0.7747, 0.9375, 0.8257, 0.7449),
    "casper-replace-random": (0.7665, 0.8482, 0.6691, 0.6065),
    "casper-replace-popular": (0.7557, 0.8477, 0.6114, 0.5435),
    "casper-replace-unpopular": (0.7615, 0.8471, 0.5228, 0.5193)}


def _table3_values():
    out = []
    for table, src in ((_T3A, "Table 3(a)"), (_T3B, "Table 3(b)")):
        for pert, row in table.items():
            for model, v in zip(MODELS, row):
                out.append(Value(f"{model}/{pert}/average_overlap", f"{model}, {pert}", v, src, tol=0.03,
                                 also=(f"{model}/{pert}/rbo", f"{model}/{pert}/jaccard")))
    return tuple(out)


def _ao(model: str, pert: str) -> str:
    return f"{model}/{pert}/average_overlap"


def _table3_claims():
    claims = [Claim("All RBO scores are lower than 1.0 (every model, every perturbation).",
                    "Table 3 caption",
                    All(*(Bound(_ao(m, p), 1.0) for m in MODELS
                          for p in LOO + REPLACE))),
              Claim("LatentCross is the most stable model against random deletion.",
                    "§5 Findings; Table 3(a)",
                    All(*(Greater(_ao("latentcross", "random-delete"), _ao(m, "random-delete"))
                          for m in MODELS if m != "latentcross")))]
    for m in MODELS:
        loo, rep = LOO, REPLACE
        claims.append(Claim(
            f"{m}: CASPER deletion is the best or second-best deletion (lowest RBO).",
            "Table 3(a)", among_lowest(_ao(m, "casper-delete"), [_ao(m, p) for p in loo], 2)))
        claims.append(Claim(
            f"{m}: a CASPER replacement gives the lowest RBO among replacements.",
            "§7.2 ('CASPER outperforms other methods in all cases'); Table 3(b)",
            AnyOf(*(lowest(_ao(m, c), [_ao(m, p) for p in rep if not p.startswith("casper")])
                    for c in rep if c.startswith("casper")))))
    for m in ("jodie", "latentcross"):
        claims.append(Claim(
            f"{m}: replacing with the least popular item is CASPER's strongest strategy.",
            "§7.2; Table 3(b)", lowest(_ao(m, "casper-replace-unpopular"),
                                       [_ao(m, f"casper-replace-{s}")
                                        for s in ("random", "popular")])))
    return tuple(claims)


def _run_table3(workdir, scale, workers, reps):
    return common._run_audits(workdir, scale, workers, reps, "foursquare", MODELS, LOO + REPLACE)


EXPERIMENTS.append(Experiment(
    name="oh2022-table3", paper=PAPER,
    paper_repetitions="3 seeds",
    title="Effectiveness of perturbations on Foursquare (deletion and item replacement)",
    artefacts="Table 3(a), 3(b)", data="Foursquare (the authors' release), users >= 10",
    scales={k: v["note"] for k, v in SCALES.items()}, runner=_run_table3,
    repeatable=True, plannable=True, grows="seeds",
    models=MODELS,
    values=_table3_values(), claims=_table3_claims(),
    notes=("JODIE's TracIn: gradients of the prediction layer (eq. 4 of Kumar et al. 2019, "
           "the authors' one linear layer over the projected user, the previous item and "
           "both one-hot vectors) of the first term of its loss, with the states replayed "
           "under each checkpoint's weights; JODIE's checkpoint interval is set on its TracIn "
           "perturbations.",
           "Rev.Adv. is untargeted here (the fake user maximises the change of a matrix-"
           "factorisation surrogate's predictions); Tang et al.'s attack promotes a target "
           "item.")))


# ------------------------------------------------------------------------------ Table 4
_T4 = {"delete": (0.8563, 0.9335, 0.9608), "replace-random": (0.8421, 0.9493, 0.9850),
       "insert-random": (0.7396, 0.9350, 0.9641)}
_POS = ("earliest-random", "random", "latest-random")


#: Table 4's repetitions: draws of each perturbation against one trained model (the paper: 10).
_T4_DRAWS = {"small": 3, "paper": 10}


def _run_table4(workdir, scale, workers, reps):
    perts = tuple(f"{p}-{e}" for e in _T4 for p in _POS)
    return common._run_audits(workdir, scale, workers, reps, "foursquare", ("latentcross",), perts,
                       seeds=(0,), draws=_T4_DRAWS[scale])


EXPERIMENTS.append(Experiment(
    name="oh2022-table4", paper=PAPER,
    paper_repetitions="1 seed × 10 draws",
    title="Cascading effect: perturbing earlier interactions hurts stability more (LatentCross)",
    artefacts="Table 4(a)", data="Foursquare (the authors' release)",
    scales={"small": SCALES["small"]["note"] + "; 3 draws of each perturbation against one "
                                               "trained model (paper: 10)",
            "paper": SCALES["paper"]["note"].replace("3 seeds", "1 seed") + "; 10 draws of "
                     "each perturbation against one trained model, as the paper"},
    runner=_run_table4, repeatable=True, plannable=True, grows="draws", models=MODELS,
    values=tuple(Value(f"latentcross/{p}-{e}/average_overlap", f"{p}, {e}", v, "Table 4(a)", tol=0.03,
                       also=(f"latentcross/{p}-{e}/rbo",))
                 for e, row in _T4.items() for p, v in zip(_POS, row)),
    claims=tuple(Claim(f"{e}: Earliest-Random < Random < Latest-Random (RBO).",
                       "§6.1; Table 4(a)", ordered(*(_ao("latentcross", f"{p}-{e}")
                                                     for p in _POS)))
                 for e in _T4),
    notes=("Each repetition draws a new perturbation against the same trained model (one "
           "seed), as the paper does; a repetition costs one fit.",)))
