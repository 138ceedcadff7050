"""One line in words for every built-in perturbation name (``recaudit perturbations list``).

:func:`describe` reads a name as :func:`~recaudit.perturb._spec.parse_name` does (``<n>``
standing for a count) and says what the perturbation changes, after whom, and which
parameters its table form (``{name = "...", key = value}``) may set.
"""

from __future__ import annotations

from recaudit.perturb._spec import EditSpec, PositionSpec, ReferenceSpec, RetrainSpec, parse_name

__all__ = ["describe", "TITLE"]

#: The built-in family's name in the catalogue.
TITLE = "built-in"

_FLOORS = {
    "seed-only": "noise floor: the same data, another training seed (Betello et al. 2023 RQ1); "
                 "what a model's lists change anyway",
    "rerun": "floor: the same data and seed fitted again; 1 for a deterministic model, below "
             "1 where training is not reproducible",
    "none": "the earlier name of rerun (stores that used it resume with the same trials)",
}

#: What each selector picks, for one edited interaction and for ``count`` of them.
_SELECTORS = {
    "random": ("a uniformly random interaction", "{k} uniformly random interactions"),
    "earliest-random": ("the first interaction of a random user",
                        "the first interaction of {k} random users"),
    "latest-random": ("the last interaction of a random user",
                      "the last interaction of {k} random users"),
    "casper": ("the interaction whose change cascades furthest (CASPER, Oh et al. 2022)",
               "the {k} interactions whose change cascades furthest (CASPER, Oh et al. 2022)"),
    "tracin": ("the most influential interaction (TracIn, Pruthi et al. 2020)",
               "the {k} most influential interactions (TracIn, Pruthi et al. 2020)"),
    "rev-adv-earliest": ("the first interaction of the user closest to a crafted fake user "
                         "(Rev.Adv., Tang et al. 2020)",
                         "the first interaction of the {k} users closest to a crafted fake "
                         "user (Rev.Adv., Tang et al. 2020)"),
    "rev-adv-random": ("a random interaction of the user closest to a crafted fake user "
                       "(Rev.Adv., Tang et al. 2020)",
                       "a random interaction of each of the {k} users closest to a crafted "
                       "fake user (Rev.Adv., Tang et al. 2020)"),
}
_ITEMS = {"random": "a random item", "popular": "the most popular item",
          "unpopular": "the least popular item"}
_PARAMETERS = {"casper": "max_len, casper_method", "tracin": "checkpoint_every"}


def _edit(spec: EditSpec) -> tuple[str, str]:
    one, many = _SELECTORS[spec.selector]
    what = one if spec.count == 1 else many.format(k=spec.count)
    text = {"delete": f"delete {what}",
            "insert": f"insert {_ITEMS[spec.strategy]} after {what}",
            "replace": f"replace {what} with {_ITEMS[spec.strategy]}"}[spec.edit]
    params = ", ".join(p for p in ("count (or -k<count>)", _PARAMETERS.get(spec.selector))
                       if p)
    return text, params


def describe(name: str) -> tuple[str, str]:
    """``(description, parameters)`` of a built-in name (``<n>``: any count)."""
    spec = parse_name(name.replace("<n>", "1"))
    if isinstance(spec, RetrainSpec):
        n = "<n>" if "<n>" in name else None
        if spec.window.endswith("%"):
            what = f"the last {n or spec.window[:-1]} % of the rows of the training log"
        else:
            what = (f"the last {n} days" if n else f"the last {spec.window}") + \
                " of the training log (any duration: 12h, 30d, P7D)"
        if spec.warm:
            return (f"a retrain: the model trained without {what}, against itself fine-tuned "
                    "on that window (a warm start) instead of retrained from scratch",
                    "warm_epochs, warm_lr, time_unit")
        return (f"a retrain: the model trained without {what} (stale), against today's "
                "retrain on all of it; the same test queries, today's contexts",
                "time_unit" if not spec.window.endswith("%") else "")
    if isinstance(spec, ReferenceSpec):
        return _FLOORS[spec.kind], ""
    if isinstance(spec, PositionSpec):
        n = "<n>" if "<n>" in name else str(spec.n)
        where = {"middle": "in the middle"}.get(spec.where, f"at the {spec.where}")
        return (f"remove {n} interactions {where} of every user's training sequence "
                "(Betello et al. 2023)", "min_keep")
    if isinstance(spec, EditSpec):
        return _edit(spec)
    raise TypeError(f"no description of {type(spec).__name__}")  # pragma: no cover
