"""MIRROR: does a recommender gain online by understanding users or by manipulating them?

An implementation of the MIRROR benchmark of Zhu et al. 2023 ("Understanding or
Manipulation: Rethinking Online Performance Gains of Modern Recommender Systems", ACM TOIS 2023,
§4-§5). A scenario combines the components of §4.1 (:class:`DocumentSet`, a document sampler, users,
:class:`FeatureExtractor`, a ranking interface and an action model ``M(u, d, D)``); the runner
(:func:`run_mirror`) plays the four stages of §4.2:

1. initial preferences ``phi(d) = M(u^0, d, {d})`` (single-document slates);
2. training data from an unbiased and a manipulative strategy mixed at ratio ``alpha``;
3. training the algorithms and letting them interact with the same users;
4. metrics: CTR, FCTR, ManiScore, Preference Shift (:func:`ctr`, :func:`fctr`,
   :func:`mani_score`, :func:`preference_shift`), offline NDCG (:func:`click_ndcg`) and
   :func:`auc`.

:class:`MirrorStudy` runs a :class:`MirrorConfig` as a study (one trial per seed, any
executor, resumable, tables ``mirror_trials`` and ``mirror_results`` of a results store).

Scenarios
---------
* ``decoy-slate`` (§5.1): the RRM action model (:mod:`recaudit.simulate.rrm`), slates of three,
  :class:`DecoyOracle` vs :class:`UnbiasedSlateOracle` (or :class:`GreedySlateOracle`); algorithms
  :class:`DeepFM`, :class:`LambdaFM`, :class:`SetRank`.
* ``topic-sequential`` (§5.3): topics, hidden quality, time budget and RecSim's interest
  evolution (:class:`TopicConfig`); :class:`PlannerOracle` (or :class:`PPOOracle`) vs
  :class:`UnbiasedTopicOracle`; algorithms :class:`DNN`, :class:`GRU` (dynamic or static). Also a
  Gymnasium environment: ``recaudit.simulate.env.TopicSequentialEnv`` (needs the ``simulate``
  extra).

Plugging in your own click model (data-driven scenarios, §5.2/§5.4)
-------------------------------------------------------------------
Any callable ``M(u, d, D) -> probability`` -- a Python function or a ``torch.nn.Module`` -- can be
the action model of a :class:`SlateScenario`. ``u`` is the user's full feature vector, ``d`` one
document's feature row and ``D`` the rows of the whole shown slate, position 1 first (modules get
float32 tensors and are called under ``torch.no_grad()``). An object with a vectorised
``click_probabilities(user, slate) -> [len(slate)]`` method is used as it is::

    import numpy as np
    from recaudit.seeds import make_rng
    from recaudit.simulate import (DocumentSet, RandomSampler, SlateScenario, GreedySlateOracle,
                                   UnbiasedSlateOracle, collect_slates, evaluate_slates,
                                   draw_sessions)

    def my_click_model(u, d, D):            # e.g. a trained AICM generator wrapped in a function
        rank = int(np.flatnonzero((D == d).all(axis=1))[0])
        return float(1 / (1 + np.exp(-(u @ d)))) * 0.9 ** rank

    docs = DocumentSet(features=np.random.default_rng(0).random((10, 4)),
                       queries=(np.arange(10),), observable=np.ones(4, bool))
    scen = SlateScenario("mine", docs, users=np.random.default_rng(1).random((50, 4)),
                         user_queries=tuple(np.array([0]) for _ in range(50)),
                         action_model=my_click_model, sampler=RandomSampler(5), slate_size=5)
    log = collect_slates(scen, [UnbiasedSlateOracle(), GreedySlateOracle()], alpha=0.5, n=1000,
                         rng=make_rng(0, "collect"))
    sessions = draw_sessions(scen, 200, make_rng(0, "eval"))
    evaluate_slates(scen, GreedySlateOracle(), sessions, make_rng(0, "rank"))  # CTR, FCTR, ...

The Greedy Oracle enumerates every ordered slate (``m!/(m-K)!`` of them), so it suits small
candidate sets; for larger ones use :class:`SlatePPOOracle`, a slate-building policy trained by PPO
on the scenario's own action model (and :class:`PPOOracle` for the sequential scenario).

Randomness: every run draws from generators derived with :mod:`recaudit.seeds` from the seed and
the stage's keys (``numpy.random.Generator`` for the simulation, ``torch.Generator`` for the
models), so the same seed repeats bit for bit.
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports
from recaudit.simulate import _results, rrm  # noqa: F401 - _results: the tables

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.simulate._measures import (auc, click_ndcg, ctr, fctr, favourite_set, mani_score,
                                             preference_list, preference_shift,
                                             preference_shift_batch, unbiased_rankings)
    from recaudit.simulate._components import (ActionModel, CallableActionModel, CTRWeightedSampler,
                                               DocumentSet, FeatureExtractor, RandomSampler,
                                               as_action_model)
    from recaudit.simulate._decoy import (DecoyOracle, DecoyRecall, decoy_documents,
                                          decoy_slate_scenario, example_documents)
    from recaudit.simulate._ppo import PPOConfig, PPOOracle, SlatePPOOracle
    from recaudit.simulate._results import (MIRROR_RESULTS, MIRROR_TRIALS, STUDY, read_results,
                                            result_row, summarise, write_results)
    from recaudit.simulate._study import MirrorStudy
    from recaudit.simulate._runner import MirrorConfig, run_mirror
    from recaudit.simulate._seq_models import DNN, GRU
    from recaudit.simulate._sequential import (EpsilonPolicy, ModelTopicPolicy, SessionResult,
                                               simulate_sessions)
    from recaudit.simulate._slate import (GreedySlateOracle, ModelSlatePolicy, SlateLog,
                                          SlateScenario, UnbiasedSlateOracle, collect_slates,
                                          draw_sessions, evaluate_slates)
    from recaudit.simulate._slate_models import DeepFM, LambdaFM, SetRank
    from recaudit.simulate._topic import (PlannerOracle, TopicConfig, TopicUsers, TopicWorld,
                                          UnbiasedTopicOracle)
    from recaudit.simulate._torch_util import TrainConfig

__getattr__, __dir__ = exports(__name__, {
    "._measures": ("auc", "click_ndcg", "ctr", "fctr", "favourite_set", "mani_score",
                   "preference_list", "preference_shift", "preference_shift_batch",
                   "unbiased_rankings"),
    "._components": ("ActionModel", "CallableActionModel", "CTRWeightedSampler", "DocumentSet",
                     "FeatureExtractor", "RandomSampler", "as_action_model"),
    "._decoy": ("DecoyOracle", "DecoyRecall", "decoy_documents", "decoy_slate_scenario",
                "example_documents"),
    "._ppo": ("PPOConfig", "PPOOracle", "SlatePPOOracle"),
    "._results": ("MIRROR_RESULTS", "MIRROR_TRIALS", "STUDY", "read_results", "result_row",
                  "summarise", "write_results"),
    "._study": ("MirrorStudy",),
    "._runner": ("MirrorConfig", "run_mirror"),
    "._seq_models": ("DNN", "GRU"),
    "._sequential": ("EpsilonPolicy", "ModelTopicPolicy", "SessionResult", "simulate_sessions"),
    "._slate": ("GreedySlateOracle", "ModelSlatePolicy", "SlateLog", "SlateScenario",
                "UnbiasedSlateOracle", "collect_slates", "draw_sessions", "evaluate_slates"),
    "._slate_models": ("DeepFM", "LambdaFM", "SetRank"),
    "._topic": ("PlannerOracle", "TopicConfig", "TopicUsers", "TopicWorld", "UnbiasedTopicOracle"),
    "._torch_util": ("TrainConfig",),
})

__all__ = [
    "rrm", "ctr", "fctr", "favourite_set", "preference_list", "unbiased_rankings",
    "mani_score", "preference_shift", "preference_shift_batch", "click_ndcg", "auc",
    "MIRROR_RESULTS", "MIRROR_TRIALS", "MirrorStudy", "STUDY", "read_results",
    "ActionModel", "CallableActionModel", "as_action_model", "DocumentSet", "FeatureExtractor",
    "RandomSampler", "CTRWeightedSampler",
    "SlateScenario", "SlateLog", "UnbiasedSlateOracle", "GreedySlateOracle", "ModelSlatePolicy",
    "collect_slates", "evaluate_slates", "draw_sessions",
    "decoy_slate_scenario", "decoy_documents", "example_documents", "DecoyOracle", "DecoyRecall",
    "TopicConfig", "TopicWorld", "TopicUsers", "UnbiasedTopicOracle", "PlannerOracle",
    "PPOOracle", "SlatePPOOracle", "PPOConfig", "simulate_sessions", "SessionResult",
    "ModelTopicPolicy", "EpsilonPolicy",
    "DeepFM", "LambdaFM", "SetRank", "DNN", "GRU", "TrainConfig",
    "MirrorConfig", "run_mirror", "summarise", "result_row", "write_results",
]
