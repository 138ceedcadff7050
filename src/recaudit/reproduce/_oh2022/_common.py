"""What Oh et al. 2022's experiments share: the paper's settings, scales, audit configs."""

from __future__ import annotations

import json
from pathlib import Path


from recaudit.reproduce._audit import (audit_trials, group_measures, rls_measures, rls_samples,
                                       shared_store)
from recaudit.reproduce._experiment import Measures
from recaudit.reproduce._scope import Scope

PAPER = "Oh et al. 2022"
MODELS = ("lstm", "tisasrec", "jodie", "latentcross")
LOO = ("random-delete", "earliest-random-delete", "latest-random-delete", "tracin-delete",
       "rev-adv-random-delete", "rev-adv-earliest-delete", "casper-delete")
REPLACE = ("random-replace-random", "earliest-random-replace-random",
           "latest-random-replace-random", "tracin-replace-random",
           "rev-adv-random-replace-random", "rev-adv-earliest-replace-random",
           "casper-replace-random", "casper-replace-popular", "casper-replace-unpopular")

#: What each scale changes (``epochs`` per model; ``users``: sampled users or all).
SCALES: dict[str, dict] = {
    "small": {"users": 250, "seeds": (0,), "epochs": {"lstm": 10, "tisasrec": 10, "jodie": 3,
                                                      "latentcross": 10},
              "extra": {}, "checkpoint_every": 5, "jodie_checkpoint_every": 1,
              "note": "250 sampled users per dataset, 1 seed (paper: all users, 3 seeds), 10 "
                      "epochs (JODIE 3; paper: 50), TracIn checkpoints every 5 epochs (JODIE: "
                      "every epoch; paper: 10)"},
    "paper": {"users": None, "seeds": (0, 1, 2), "epochs": {}, "extra": {},
              "checkpoint_every": 10, "jodie_checkpoint_every": 10,
              "note": "the paper's settings: all users, 3 seeds, the @oh2022 presets "
                      "(50 epochs), TracIn checkpoints every 10 epochs"},
}


def _model(name: str, scale: str):
    from recaudit.audit import ModelSpec

    s = SCALES[scale]
    params = dict(s["extra"].get(name, {}))
    if name in s["epochs"]:
        params["epochs"] = s["epochs"][name]
    if name != "jodie":
        params["checkpoint_every"] = s["checkpoint_every"]
    return ModelSpec(f"{name}@oh2022", params)


def _perturbation(name: str, model: str, scale: str):
    """CASPER's window: the latest 50 interactions for LSTM / TiSASRec, all for the others.
    JODIE's TracIn checkpoints are set on its TracIn perturbations, not on the model (whose
    spec, and so its trials' ids, predate JODIE's TracIn); the other models' specs set them."""
    if name.startswith("casper") and model in ("lstm", "tisasrec"):
        return {"name": name, "max_len": 50}
    if name.startswith("tracin") and model == "jodie":
        return {"name": name, "checkpoint_every": SCALES[scale]["jodie_checkpoint_every"]}
    return name


def _configs(workdir: Path, scale: str, dataset: str, models, perturbations, seeds=None,
             draws: int = 1, reps: Scope | None = None):
    """Audit configs on the shared store: one per CASPER window (LSTM and TiSASRec read the
    latest 50 interactions, LatentCross all) and JODIE apart (its TracIn checkpoints on the
    perturbations: :func:`_perturbation`). ``seeds`` and
    ``draws``: the scale's repetitions, of which the scope ``reps`` may take fewer (and fewer
    models and perturbations)."""
    from recaudit.audit import AuditConfig, DatasetSpec, MetricSpec, SplitSpec

    s = SCALES[scale]
    reps = reps or Scope()
    seeds, draws = reps.take(tuple(seeds or s["seeds"]), draws)
    models = reps.pick(tuple(models), MODELS)
    out = []
    for group in (("lstm", "tisasrec"), ("latentcross",), ("jodie",)):
        ms = [m for m in models if m in group]
        plist = list(reps.keep(tuple(perturbations)))
        if not ms or not plist:
            continue
        out.append(AuditConfig(
            name=f"oh2022-{dataset}", seeds=seeds, draws=draws,
            datasets=(DatasetSpec(dataset, min_user_interactions=10, sample_users=s["users"]),),
            split=SplitSpec("temporal-ratio", 0.9, floor="test"),
            models=tuple(_model(m, scale) for m in ms),
            perturbations=tuple(_perturbation(p, ms[0], scale) for p in plist),
            # their "RBO" is average overlap over the whole ranking: the full lists
            metrics=MetricSpec(k=10, p=0.9, depth=None),
            output=str(shared_store(workdir, f"oh2022-{dataset}"))))
    return out


def _pert_key(label: str) -> str:
    """A perturbation's name from its store label (tables are stored as canonical JSON)."""
    return json.loads(label)["name"] if label.startswith("{") else label


def _run_audits(workdir, scale, workers, reps, dataset, models, perturbations, *, seeds=None,
                draws: int = 1, groups: str | None = None, prefix: str = "") -> Measures:
    out = Measures()
    for cfg in _configs(workdir, scale, dataset, models, perturbations, seeds, draws, reps):
        summary = audit_trials(cfg, workers, train=(reps or Scope()).train)
        if summary.empty:  # --no-train and nothing stored yet
            continue
        out.merge(Measures(rls_measures(summary.assign(
            perturbation=summary["perturbation"].map(_pert_key))),
            rls_samples(cfg, summary, _pert_key)))
        if groups:
            out.merge(Measures(*group_measures(cfg, summary, groups, _pert_key)))
    return out.prefixed(prefix)

