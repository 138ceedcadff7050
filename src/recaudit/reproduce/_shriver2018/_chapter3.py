"""Shriver. *Assessing the Quality and Stability of Recommender Systems.* MS thesis,
University of Nebraska-Lincoln, 2018 — Tables 3.4 and 3.6 (property templates; this module)
and Tables 4.5-4.9 (influence-guided fuzzing; :mod:`._chapter4`).

Chapter 3 used MovieLens 20M (and Jester, for Table 3.5). The paper scale runs the protocol on
MovieLens 20M (registered as ``ml-20m`` with its checksum; ``recaudit datasets fetch ml-20m``
where the network allows: these machines have no copy). The small scale runs it on
ml-latest-small (the 2016 release: 100,004 ratings of 671 users, 9,125 movies), which stands
in for it: counts are compared as shares of users or movies, and the thesis' findings, tested
as :class:`Claim` rows, hold or differ *on other data* — a count of ml-latest-small does not
contradict one of MovieLens 20M (:attr:`Experiment.substitute`). Chapter 4 used
MovieLens-100k, which we have.
Models: the ``@shriver2018`` presets (LensKit 3.0's Java defaults: User-User and Item-Item keep
negatively similar neighbours, FunkSVD's item biases are undamped; see
:mod:`recaudit.models._presets`).

Tolerances of the published values (a value outside them makes the verdict at best "direction
reproduced"): precision and recall within half the printed value, shares of users and of
the most rated movie's ratings 0.02, shares of movies 0.01, average ratings (ARTK) 0.25, exact
counts (NRANKS, NRTK(min), IANR, genre ranks) 0; Table 3.6's percentages within max(5, half
the printed value) points.
"""

from __future__ import annotations

from recaudit.reproduce._experiment import Claim, Experiment, Value
from recaudit.reproduce._shriver2018._data import DATASETS, MODELS
from recaudit.reproduce._shriver2018._props import run_table34, run_table36

PAPER = "Shriver 2018"
NAMES = {"user-user": "User-User", "item-item": "Item-Item", "funksvd": "FunkSVD",
         "slope-one": "Slope One", "lightfm": "LightFM"}
UU, II, FS, SO, LF = MODELS
#: MovieLens 20M: users, movies, ratings of the most rated movie (Pulp Fiction; Table 3.4's
#: NRTK(max) of Item-Item and FunkSVD).
ML20M = {"users": 138493, "items": 27278, "max_item_ratings": 67310}

EXPERIMENTS: list[Experiment] = []  # in the order the report shows them

# ------------------------------------------------------------------------------ Table 3.4
#: Table 3.4, columns User-User, Item-Item, FunkSVD, Slope One, LightFM.
T34 = {
    "Precision": (1.45e-6, 1.79e-3, 1.40e-3, 1.44e-6, 5.20e-3),
    "Recall": (6.68e-8, 3.41e-4, 3.36e-4, 3.99e-8, 2.13e-3),
    "NRANKS(min,>=)": (0, 10, 10, 10, 10),
    "NRI": (465, 2791, 1798, 1580, 786),
    "NTRI": (89, 628, 579, 474, 163),
    "NRLMU": (3442, 0, 10740, 5465, 233),
    "NRL": (132390, 138493, 47065, 126970, 138250),
    "NRS": (125588, 138417, 13180, 87842, 85784),
    "NUPRL(max,<=)": (90, 1, 782, 42, 3),
    "NUIR(max,>=)": (78575, 48857, 135909, 104763, 99833),
    "ARTK(min,<=)": (0.5, 1.75, 1.79, 0.5, 0.5),
    "ARTK(median,=)": (1.50, 3.80, 3.65, 3.75, 3.24),
    "ARTK(max,>=)": (5.0, 4.83, 5.0, 5.0, 5.0),
    "NRTK(min,<=)": (1, 2, 1, 1, 0),
    "NRTK(median,=)": (2, 6, 1756.5, 1, 71),
    "NRTK(max,>=)": (47, 67310, 67310, 70, 66172),
}
#: Table 3.4's IANR (genres never recommended) and the first genre of IANRLCMP.
T34_IANR: tuple[set[str], ...] = ({"IMAX"}, set(), set(), set(), {"(no genres listed)"})
T34_TOP_GENRE = ("Drama", "Drama", "Drama", "Drama", "Adventure")
_BY = {"NRI": "items", "NTRI": "items", "NRLMU": "users", "NRL": "users", "NRS": "users",
       "NUPRL": "users", "NUIR": "users", "NRTK": "max_item_ratings"}
_DENOM = {"users": "users", "items": "movies", "max_item_ratings": "ratings of the most rated "
          "movie"}


def _table34_values() -> tuple[Value, ...]:
    out = []
    for key, row in T34.items():
        base = key.split("(")[0]
        for m, v in zip(MODELS, row, strict=True):
            name = f"{NAMES[m]}, {key}"
            if key in ("NRTK(min,<=)",) or base not in _BY:
                tol = {"Precision": 0.5 * v, "Recall": 0.5 * v, "NRANKS(min,>=)": 0.0,
                       "NRTK(min,<=)": 0.0}.get(key, 0.25)
                out.append(Value(f"{m}/{key}/value", name, float(v), "Table 3.4", tol=tol))
            else:
                by = _BY[base]
                tol = 0.01 if by == "items" else 0.02
                out.append(Value(f"{m}/{key}/share", f"{name} / {_DENOM[by]} [ML-20M: {v:g}]",
                                 v / ML20M[by], "Table 3.4", tol=tol,
                                 also=(f"{m}/{key}/value",)))
    for m, never, top in zip(MODELS, T34_IANR, T34_TOP_GENRE, strict=True):
        out.append(Value(f"{m}/IANR/count", f"{NAMES[m]}, IANR: genres never recommended "
                         f"[ML-20M: {sorted(never) or '∅'}]", float(len(never)), "Table 3.4",
                         tol=0.0))
        out.append(Value(f"{m}/IANRLCMP/rank:{top}", f"{NAMES[m]}, IANRLCMP: rank of {top}",
                         1.0, "Table 3.4", tol=0.0))
    return tuple(out)


def _k(m: str, key: str, what: str = "value") -> str:
    return f"{m}/{key}/{what}"


def _ratio_within(a: float, b: float, factor: float) -> bool:
    return a > 0 and b > 0 and max(a, b) / min(a, b) <= factor


def _tau(x, a: str, b: str) -> float:
    """Kendall's tau between two models' genre orders (IANRLCMP ranks)."""
    ga = {k.split("rank:")[1]: v for k, v in x.items() if k.startswith(f"{a}/IANRLCMP/")}
    gb = {k.split("rank:")[1]: v for k, v in x.items() if k.startswith(f"{b}/IANRLCMP/")}
    common = sorted(set(ga) & set(gb))
    from scipy import stats as _stats   # (here: listing the experiments imports no scipy)

    return float(_stats.kendalltau([ga[g] for g in common], [gb[g] for g in common]).statistic)


def _table34_claims() -> tuple[Claim, ...]:
    P, R = "Precision", "Recall"
    return (
        Claim.exact("User-User and Slope One have similar precision and recall (within a factor "
              "of 2)...", "§3.5.1", (_k(UU, P), _k(SO, P), _k(UU, R), _k(SO, R)),
              lambda x: _ratio_within(x[_k(UU, P)], x[_k(SO, P)], 2)
              and _ratio_within(x[_k(UU, R)], x[_k(SO, R)], 2)),
        Claim.exact("...but Slope One covers more movies (NRI).", "§3.5.1",
              (_k(UU, "NRI"), _k(SO, "NRI")), lambda x: x[_k(SO, "NRI")] > x[_k(UU, "NRI")]),
        Claim.exact("User-User never recommends an IMAX movie; Slope One recommends every genre "
              "(IANR).", "§3.5.1", (f"{UU}/IANR/has:IMAX", f"{SO}/IANR/count"),
              lambda x: x[f"{UU}/IANR/has:IMAX"] == 1 and x[f"{SO}/IANR/count"] == 0),
        Claim.exact("Item-Item gives every user a different list (NRL = users, NRLMU = 0); FunkSVD "
              "produces fewer distinct lists.", "§3.5.1",
              (_k(II, "NRL"), _k(II, "NRLMU"), _k(FS, "NRL"), "data/users"),
              lambda x: x[_k(II, "NRL")] == x["data/users"] and x[_k(II, "NRLMU")] == 0
              and x[_k(FS, "NRL")] < x[_k(II, "NRL")]),
        Claim.exact("LightFM has higher precision and recall than FunkSVD and Item-Item.", "§3.5.1",
              tuple(_k(m, q) for m in (LF, FS, II) for q in (P, R)),
              lambda x: all(x[_k(LF, q)] > max(x[_k(FS, q)], x[_k(II, q)]) for q in (P, R))),
        Claim.exact("LightFM covers fewer movies than FunkSVD (NRI) and has fewer distinct ranked "
              "sets than Item-Item (NRS).", "§3.5.1",
              (_k(LF, "NRI"), _k(FS, "NRI"), _k(LF, "NRS"), _k(II, "NRS")),
              lambda x: x[_k(LF, "NRI")] < x[_k(FS, "NRI")]
              and x[_k(LF, "NRS")] < x[_k(II, "NRS")]),
        Claim.exact("LightFM never recommends a movie without genres ('(no genres listed)' in "
              "IANR).", "§3.5.1", (f"{LF}/IANR/has:(no genres listed)",),
              lambda x: x[f"{LF}/IANR/has:(no genres listed)"] == 1),
        Claim.exact("FunkSVD recommends a movie with a single rating, Item-Item none with fewer than "
              "two; LightFM recommends movies nobody rated (NRTK(min) = 1, >= 2, 0).",
              "§3.5.1", tuple(_k(m, "NRTK(min,<=)") for m in (FS, II, LF)),
              lambda x: x[_k(FS, "NRTK(min,<=)")] == 1 and x[_k(II, "NRTK(min,<=)")] >= 2
              and x[_k(LF, "NRTK(min,<=)")] == 0),
        Claim.exact("LightFM recommends a movie rated 0.5 on average, the scale's minimum; FunkSVD's "
              "and Item-Item's lowest average ratings are higher (ARTK(min)).", "§3.5.1",
              tuple(_k(m, "ARTK(min,<=)") for m in (LF, FS, II)),
              lambda x: x[_k(LF, "ARTK(min,<=)")] == 0.5
              and min(x[_k(FS, "ARTK(min,<=)")], x[_k(II, "ARTK(min,<=)")]) > 0.5),
        Claim.exact("Item-Item never recommends a movie whose average rating is 5; FunkSVD does "
              "(ARTK(max)).", "§3.5.1", (_k(II, "ARTK(max,>=)"), _k(FS, "ARTK(max,>=)")),
              lambda x: x[_k(II, "ARTK(max,>=)")] < 5.0 and x[_k(FS, "ARTK(max,>=)")] == 5.0),
        Claim.exact("Slope One's median average rating of recommended movies is more than double "
              "User-User's (ARTK(median)).", "§3.5.1",
              (_k(SO, "ARTK(median,=)"), _k(UU, "ARTK(median,=)")),
              lambda x: x[_k(SO, "ARTK(median,=)")] > 2 * x[_k(UU, "ARTK(median,=)")]),
        Claim.exact("FunkSVD and Slope One recommend similar numbers of movies (NRI within 25 %) and "
              "order the genres alike (Kendall's tau of IANRLCMP > 0.5; thesis 0.66).",
              "§3.5.1", (_k(FS, "NRI"), _k(SO, "NRI"), f"{FS}/IANRLCMP/rank:Drama",
                         f"{SO}/IANRLCMP/rank:Drama"),
              lambda x: _ratio_within(x[_k(FS, "NRI")], x[_k(SO, "NRI")], 1.25)
              and _tau(x, FS, SO) > 0.5),
        Claim.exact("Slope One and LightFM produce similar numbers of ranked sets (NRS) and similar "
              "NUIR(max) (within 10 %).", "§3.5.1",
              tuple(_k(m, q) for m in (SO, LF) for q in ("NRS", "NUIR(max,>=)")),
              lambda x: _ratio_within(x[_k(SO, "NRS")], x[_k(LF, "NRS")], 1.1)
              and _ratio_within(x[_k(SO, "NUIR(max,>=)")], x[_k(LF, "NUIR(max,>=)")], 1.1)),
    )


_SCALE34 = {"small": "the thesis' protocol in full (five models, 5-fold cross-validation on "
                     "users, k = 10) on ml-latest-small instead of MovieLens 20M; nothing is "
                     "reduced",
            "paper": "the thesis' protocol (five models, 5-fold cross-validation on users, "
                     "k = 10) on MovieLens 20M, the thesis' data"}
#: What the claims are tested on, per scale, where it is not the thesis' data.
_SUBSTITUTE = {"small": "ml-latest-small for MovieLens 20M"}
_DOWNLOADS = {"paper": (DATASETS["paper"],)}

EXPERIMENTS.append(Experiment(
    name="shriver2018-table3.4", paper=PAPER,
    title="Property templates reveal differences that precision and recall hide",
    artefacts="Table 3.4", data="MovieLens 20M at the paper scale, ml-latest-small (2016 "
    "release) at the small one, each with the whole movies.csv catalogue, genres as "
    "attributes",
    scales=_SCALE34, runner=run_table34, values=_table34_values(), claims=_table34_claims(),
    substitute=_SUBSTITUTE, downloads=_DOWNLOADS,
    notes=("On ml-latest-small (671 users; MovieLens 20M has 138,493) counts are compared "
           "as shares, and the findings of §3.5.1 hold or differ on that data: they are not "
           "contradicted by it.",
           "ml-latest-small has no user whose ratings all agree, so User-User's NRANKS(min) = 0 "
           "anomaly (users with zero rating variance get no list) cannot appear; the model "
           "reproduces it on such users (tests/models_cf).",
           "Table 3.5 (Jester, registered as `jester`) is not an experiment here.")))


# ------------------------------------------------------------------------------ Table 3.6
#: Table 3.6 (maximum absolute % change between consecutive steps), same columns.
T36 = {
    "Precision": (4121.02, 297.16, 963.42, 110269.67, 25.15),
    "Recall": (4389.77, 456.89, 1494.53, 446349.93, 48.40),
    "NRANKS(min,>=)": (0.0, 0.0, 0.0, 0.0, 0.0),
    "NRI": (129.38, 28.34, 56.89, 48.39, 20.15),
    "NTRI": (102.80, 54.88, 12.24, 47.63, 23.43),
    "NRLMU": (6541.91, 0.0, 212.43, 532.07, 86.10),
    "NRL": (2.21, 0.0, 494.22, 7.15, 0.27),
    "NRS": (18.02, 2.65, 765.80, 25.82, 12.83),
    "NUPRL(max,<=)": (18.14, 12.27, 1691.55, 191.90, 48.24),
    "NUIR(max,>=)": (80.16, 80.06, 0.51, 30.66, 6.67),
    "ARTK(min,<=)": (0.0, 25.00, 24.92, 0.0, 100.00),
    "ARTK(median,=)": (75.96, 2.06, 1.45, 7.69, 1.63),
    "ARTK(max,>=)": (0.0, 1.96, 0.0, 0.0, 16.04),
    "NRTK(min,<=)": (13.05, 13.05, 13.05, 13.05, 0.0),
    "NRTK(median,=)": (2035.15, 953.27, 33.87, 761.55, 100.00),
    "NRTK(max,>=)": (135166.76, 0.0, 0.0, 20585.97, 25.38),
}
DIVERSITY = ("NRLMU", "NRL", "NRS", "NUPRL(max,<=)", "NUIR(max,>=)")


def _c(m: str, key: str) -> str:
    return f"{m}/{key}/max_change"


def _table36_values() -> tuple[Value, ...]:
    return tuple(Value(_c(m, key), f"{NAMES[m]}, {key}: max |% change|", v, "Table 3.6",
                       tol=max(5.0, 0.5 * v), also=(f"{m}/{key}/max_change_raw",))
                 for key, row in T36.items() for m, v in zip(MODELS, row, strict=True))


def _table36_claims() -> tuple[Claim, ...]:
    acc = ("Precision", "Recall")
    return (
        Claim.exact("Precision and recall are not robust: they change by 5 % or more between "
              "consecutive steps for every algorithm.", "§3.5.2; Table 3.6",
              tuple(_c(m, q) for m in MODELS for q in acc),
              lambda x: all(x[_c(m, q)] >= 5.0 for m in MODELS for q in acc)),
        Claim.exact("LightFM's precision and recall change least (thesis: under 50 %, the others' in "
              "the hundreds).", "§3.5.2", tuple(_c(m, q) for m in MODELS for q in acc),
              lambda x: all(x[_c(LF, q)] < min(x[_c(m, q)] for m in MODELS if m != LF)
                            for q in acc)),
        Claim.exact("NRANKS is an invariant: 0 % change for every algorithm.", "§3.5.2",
              tuple(_c(m, "NRANKS(min,>=)") for m in MODELS),
              lambda x: all(x[_c(m, "NRANKS(min,>=)")] == 0 for m in MODELS)),
        Claim.exact("ARTK(max) is robust (< 5 %) for the algorithms that use only ratings (User-"
              "User, Item-Item, FunkSVD, Slope One), not for LightFM.", "§3.5.2",
              tuple(_c(m, "ARTK(max,>=)") for m in MODELS),
              lambda x: all(x[_c(m, "ARTK(max,>=)")] < 5 for m in (UU, II, FS, SO))
              and x[_c(LF, "ARTK(max,>=)")] >= 5),
        Claim.exact("NRTK(median) and NUPRL are not robust for any algorithm.", "§3.5.2",
              tuple(_c(m, q) for m in MODELS for q in ("NRTK(median,=)", "NUPRL(max,<=)")),
              lambda x: all(x[_c(m, q)] >= 5 for m in MODELS
                            for q in ("NRTK(median,=)", "NUPRL(max,<=)"))),
        Claim.exact("Item-Item has more robust properties than Slope One (thesis: 7 vs 3).",
              "§3.5.2", (f"{II}/robust_count", f"{SO}/robust_count"),
              lambda x: x[f"{II}/robust_count"] > x[f"{SO}/robust_count"]),
        Claim.exact("None of Slope One's diversity properties is robust.", "§3.5.2",
              tuple(_c(SO, q) for q in DIVERSITY),
              lambda x: all(x[_c(SO, q)] >= 5 for q in DIVERSITY)),
    )


EXPERIMENTS.append(Experiment(
    name="shriver2018-table3.6", paper=PAPER,
    title="Which properties stay put as the dataset evolves",
    artefacts="Table 3.6", data="MovieLens 20M at the paper scale, ml-latest-small at the "
    "small one: the earliest 50, 60, ..., 100 % of the ratings, movies released by the year "
    "of the latest one",
    scales={s: n.replace("k = 10)", "k = 10, six steps)") for s, n in _SCALE34.items()},
    substitute=_SUBSTITUTE, downloads=_DOWNLOADS,
    runner=run_table36, values=_table36_values(), claims=_table36_claims(),
    notes=("Counts are normalised before the percentage change (users, recommendable movies, "
           "ratings of the most rated movie), our reading of 'normalized the values' (§3.5.2): "
           "it reproduces the table's invariants (see ._props): Item-Item's NRL at "
           "0 %, and one identical NRTK(min) change for the four rating-only models (thesis: "
           "13.05 %), which our data shows too. The raw counts' changes are shown beside.",
           "A change from 0 is infinite (shown as inf); robust = under 5 %.")))
