"""What Zhu et al. 2023's experiments share: measure keys, and MIRROR run as a study."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from recaudit.reproduce._audit import shared_store
from recaudit.reproduce._experiment import Measures

PAPER = "Zhu et al. 2023"
SLUG = {"DeepFM": "deepfm", "LambdaFM": "lambdafm", "SetRank": "setrank", "DNN": "dnn",
        "GRU": "gru", "Unbiased Oracle": "unbiased", "Decoy Oracle": "decoy",
        "Greedy Oracle": "greedy", "Planner Oracle": "planner"}
NAME = {v: k.replace(" Oracle", "") for k, v in SLUG.items()}  # key -> display name
ROUNDS = 20


def _mixes(step: float) -> tuple[float, ...]:
    return tuple(round(k * step, 10) for k in range(int(round(1 / step)) + 1))


def _key(algo: str, mix, metric: str, rnd=None) -> str:
    parts = [SLUG.get(algo, algo.lower())]
    if mix is not None and not (isinstance(mix, float) and np.isnan(mix)):
        parts.append(f"mix{float(mix):g}")
    if rnd is not None and not (isinstance(rnd, float) and np.isnan(rnd)):
        parts.append(f"round{int(rnd):02d}")
    return "/".join(parts + [metric])


# ------------------------------------------------------------------------------ running
def run_seeds(workdir: Path, config, workers: int = 1, train: bool = True) -> list[dict]:
    """Run (or resume) ``config`` (a :class:`MirrorConfig`) as a
    :class:`~recaudit.simulate.MirrorStudy`, one trial per seed, in the paper's store for the
    scale (``zhu2023-mirror-<scale>.duckdb`` beside the experiment folders: seeds it holds
    are not run again); returns the result rows of the config's seeds. ``train=False``:
    read what the store holds."""
    from recaudit.errors import ConfigError
    from recaudit.experiment import Store, run_study
    from recaudit.simulate import MirrorStudy, read_results

    study = MirrorStudy(config, shared_store(workdir, "zhu2023-mirror"), workers=workers)
    ids = {t.id for t in study.plan()}
    if train:
        run_study(study)
    elif not Path(study.output).exists():
        raise ConfigError(f"{study.output} holds no trials to record (--no-train)")
    with Store(study.output, read_only=True) as store:
        rows = read_results(store)
    rows = rows[rows["trial_id"].isin(ids)].drop(columns=["trial_id"])
    return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
            for r in rows.to_dict(orient="records")]


def measures(rows: list[dict]) -> Measures:
    """Mean (and ``/sd`` over seeds) of every (algorithm, mix, round, metric) of ``rows``,
    with the per-seed values as samples (replicate: the seed, which is paired across
    algorithms and mixes: the same simulated users)."""
    import pandas as pd

    from recaudit.simulate import summarise

    out: dict[str, float] = {}
    for r in summarise(rows).itertuples():
        k = _key(r.algorithm, r.mix, r.metric, r.round)
        out[k] = float(r.mean)
        if r.count > 1:
            out[f"{k}/sd"] = float(r.std)
    samples: dict[str, list[tuple[str, str, float]]] = {}
    for r in rows:
        if r["value"] is not None:
            samples.setdefault(_key(r["algorithm"], r["mix"], r["metric"], r["round"]),
                               []).append((str(r["seed"]), "all", float(r["value"])))
    return Measures(out, {k: pd.DataFrame(v, columns=["replicate", "unit", "value"])
                          for k, v in samples.items()})


def slope_rule(algo: str, metric: str, mixes, rising: bool):
    """The least-squares slope of ``metric`` over the mix ratios is positive (``rising``) or
    negative: a contrast of the curve's points, paired by seed."""
    from recaudit.reproduce.rules import Contrast

    centre = float(np.mean(mixes))
    sign = 1.0 if rising else -1.0
    return Contrast(tuple((f"{algo}/mix{m:g}/{metric}", sign * (m - centre)) for m in mixes),
                    f"slope of {algo}/{metric} over the mix ratio "
                    + ("> 0" if rising else "< 0"))


def _curve_keys(algo: str, mixes, metrics=("ctr", "fctr")) -> tuple[str, ...]:
    return tuple(f"{algo}/mix{m:g}/{x}" for m in mixes for x in metrics)
