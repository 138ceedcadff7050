"""The MIRROR runner: the four stages of Zhu et al. 2023 §4.2 over mix ratios and seeds.

For every seed the scenario is built from ``make_rng(seed, "mirror", scenario, "scenario")``
(stage 1 computes the initial preferences); for every mix ratio ``alpha`` the training data is
collected with the unbiased strategy and the manipulative one mixed at ``alpha`` (stage 2), every
algorithm is trained and interacts with the same users (stage 3), and the metrics are computed
(stage 4). The results are long-format rows ``(scenario, algorithm, mix, seed, round, metric,
value)``; oracle rows have ``mix = None`` and rows that are not per-round have ``round = None``.
Every random draw derives from the seed and its stage's keys, so a run repeats exactly and does not
depend on the order of mixes or algorithms.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from recaudit.config import Config
from recaudit.metrics import RBOVariant
from recaudit.seeds import derive_seed, make_rng
from recaudit.simulate import _measures as _m
from recaudit.simulate._results import result_row
from recaudit.simulate._torch_util import TrainConfig

__all__ = ["MirrorConfig", "run_mirror", "SLATE_ALGORITHMS", "SEQUENTIAL_ALGORITHMS", "SCENARIOS"]

SCENARIOS = ("decoy-slate", "topic-sequential")
SLATE_ALGORITHMS = ("DeepFM", "LambdaFM", "SetRank")
SEQUENTIAL_ALGORITHMS = ("DNN", "GRU", "GRU-static")


@dataclass(frozen=True)
class MirrorConfig(Config):
    """One MIRROR benchmark run (Zhu et al. 2023).

    scenario: ``"decoy-slate"`` (§5.1) or ``"topic-sequential"`` (§5.3). mixes: ratios
    ``alpha`` of manipulative training data, in [0, 1]. seeds: the seeds. algorithms: ``None``
    = the scenario's defaults (DeepFM, SetRank; or DNN, GRU). manipulative: the manipulative
    oracle (``"decoy"``, ``"greedy"`` or ``"ppo"`` for slates, ``"planner"`` or ``"ppo"`` for
    the sequential scenario). n_train: training slates (slate scenario; default 2000) or
    sessions (sequential; default 150; played by distinct users of the evaluation pool).
    n_eval: evaluation slates (default 500) or users (default 150). test_fraction: share of
    the collected data held out for the offline NDCG and AUC. train: the algorithms' training
    settings. rbo_p: persistence of the RBO of Preference Shift (default 0.9). explore:
    (sequential scenario only) probability that a data-collection oracle shows a random
    candidate instead of its choice. Without it (``explore=0``, the paper's setting) the
    logged data never shows most (profile, topic) pairs and the learned models extrapolate
    badly; we default to ``0.2`` and state it. rbo_variant: the RBO of Preference Shift
    (``ext``, ``min``, ``max``, ``trunc``; default: extrapolated). ps_k: length of the
    preference lists ``L_r`` (default: all documents).
    """

    scenario: Literal["decoy-slate", "topic-sequential"] = "decoy-slate"
    mixes: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    seeds: tuple[int, ...] = (0, 1, 2)
    algorithms: tuple[str, ...] | None = None
    manipulative: Literal["decoy", "greedy", "ppo", "planner"] | None = None
    n_train: int | None = None
    n_eval: int | None = None
    test_fraction: float = 0.15
    train: TrainConfig = field(default_factory=TrainConfig)
    rbo_p: float = 0.9
    explore: float = 0.2
    rbo_variant: RBOVariant = "ext"
    ps_k: int | None = None

    def validate(self) -> None:
        from recaudit.errors import did_you_mean

        bad = self.invalid
        if not self.mixes or any(not 0.0 <= a <= 1.0 for a in self.mixes):
            raise bad("mixes", f"mixes: every mix ratio must lie in [0, 1]; got {self.mixes}")
        if not self.seeds:
            raise bad("seeds", "seeds: give at least one seed")
        if self.train_size < 10:
            raise bad("n_train", f"n_train must be >= 10; got {self.n_train}")
        if self.eval_size < 1:
            raise bad("n_eval", f"n_eval must be >= 1; got {self.n_eval}")
        if not 0.0 < self.rbo_p < 1.0:
            raise bad("rbo_p", f"rbo_p must lie in (0, 1); got {self.rbo_p}")
        if self.ps_k is not None and self.ps_k < 1:
            raise bad("ps_k", f"ps_k must be >= 1 or None; got {self.ps_k}")
        if not 0.0 <= self.explore <= 1.0:
            raise bad("explore", f"explore must lie in [0, 1]; got {self.explore}")
        if not 0.0 < self.test_fraction < 1.0:
            raise bad("test_fraction", f"test_fraction must lie in (0, 1); got "
                                       f"{self.test_fraction}")
        allowed = SLATE_ALGORITHMS if self.scenario == "decoy-slate" else SEQUENTIAL_ALGORITHMS
        for a in self.resolved_algorithms():
            if a not in allowed:
                raise bad("algorithms", f"algorithms: {a!r} is not available for "
                                        f"{self.scenario}; choose from {', '.join(allowed)}."
                                        + did_you_mean(a, allowed))
        oracles = (("decoy", "greedy", "ppo") if self.scenario == "decoy-slate"
                   else ("planner", "ppo"))
        if self.manipulative is not None and self.manipulative not in oracles:
            raise bad("manipulative", f"manipulative: choose one of {', '.join(oracles)} for "
                                      f"{self.scenario}; got {self.manipulative!r}")

    @property
    def train_size(self) -> int:
        if self.n_train is not None:
            return int(self.n_train)
        return 2000 if self.scenario == "decoy-slate" else 150

    @property
    def eval_size(self) -> int:
        if self.n_eval is not None:
            return int(self.n_eval)
        return 500 if self.scenario == "decoy-slate" else 150

    def resolved_algorithms(self) -> tuple[str, ...]:
        if self.algorithms is not None:
            return tuple(self.algorithms)
        return ("DeepFM", "SetRank") if self.scenario == "decoy-slate" else ("DNN", "GRU")

    def resolved_manipulative(self) -> str:
        if self.manipulative is not None:
            return self.manipulative
        return "decoy" if self.scenario == "decoy-slate" else "planner"


def run_mirror(config: MirrorConfig, progress=None) -> list[dict]:
    """Run the benchmark; returns the long-format result rows (see the module docstring).

    ``progress``: optional callable ``progress(message)`` for status lines.
    """
    if config.scenario == "decoy-slate":
        return _run_slate(config, progress)
    from recaudit.simulate._sequential import run_sequential

    return run_sequential(config, progress)


def _slate_oracle(name: str, scenario, seed: int):
    from recaudit.simulate._decoy import DecoyOracle
    from recaudit.simulate._ppo import PPOConfig, SlatePPOOracle
    from recaudit.simulate._slate import GreedySlateOracle

    if name == "ppo":
        return SlatePPOOracle(seed=derive_seed(seed, "mirror", "ppo"),
                              config=PPOConfig(expected_reward=True)).train(scenario)
    return DecoyOracle() if name == "decoy" else GreedySlateOracle()


def _slate_model(name: str, train: TrainConfig):
    from recaudit.simulate import _slate_models

    return getattr(_slate_models, name)(train)


def _run_slate(cfg: MirrorConfig, progress) -> list[dict]:
    from recaudit.simulate._decoy import decoy_slate_scenario
    from recaudit.simulate._slate import (ModelSlatePolicy, UnbiasedSlateOracle, collect_slates,
                                          draw_sessions, evaluate_slates)

    rows: list[dict] = []
    manip_name = cfg.resolved_manipulative()
    for seed in cfg.seeds:
        scen = decoy_slate_scenario(make_rng(seed, "mirror", cfg.scenario, "scenario"))
        scen.initial_preferences()  # stage 1
        sessions = draw_sessions(scen, cfg.eval_size, make_rng(seed, "mirror", "eval-sessions"))
        unbiased, manip = UnbiasedSlateOracle(), _slate_oracle(manip_name, scen, seed)
        for pol in (unbiased, manip):
            res = evaluate_slates(scen, pol, sessions, make_rng(seed, "mirror", "eval", pol.name))
            for met in ("ctr", "fctr", "mani_score"):
                rows.append(result_row(cfg.scenario, pol.name, None, seed, met, res[met]))
        fx = scen.features
        for mix in cfg.mixes:
            log = collect_slates(scen, [unbiased, manip], mix, cfg.train_size,
                                 make_rng(seed, "mirror", "collect", float(mix)))
            perm = make_rng(seed, "mirror", "split", float(mix)).permutation(cfg.train_size)
            n_test = max(1, int(round(cfg.test_fraction * cfg.train_size)))
            test, train = log.take(perm[:n_test]), log.take(perm[n_test:])
            for algo in cfg.resolved_algorithms():
                if progress:
                    progress(f"seed {seed} mix {mix:g}: {algo}")
                model = _slate_model(algo, cfg.train).fit(
                    fx.users(scen.users[train.users]),
                    fx.documents(scen.documents.features[train.slates]), train.clicks,
                    seed=derive_seed(seed, "mirror", "fit", algo, float(mix)))
                s = model.score(fx.users(scen.users[test.users]),
                                fx.documents(scen.documents.features[test.slates]))
                rows.append(result_row(cfg.scenario, algo, mix, seed, "ndcg", _m.click_ndcg(s, test.clicks)))
                rows.append(result_row(cfg.scenario, algo, mix, seed, "auc", _m.auc(s, test.clicks)))
                res = evaluate_slates(scen, ModelSlatePolicy(model, algo), sessions,
                                      make_rng(seed, "mirror", "eval", algo, float(mix)))
                for met in ("ctr", "fctr", "mani_score"):
                    rows.append(result_row(cfg.scenario, algo, mix, seed, met, res[met]))
    return rows
