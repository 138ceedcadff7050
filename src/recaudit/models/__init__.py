"""Recommenders: the :class:`Recommender` protocol, built-in models and the registry.

``create(name, **params)`` builds any registered model; ``available()`` lists the names. Every
model follows one convention (:class:`Configurable`): ``Model(**params)`` validates its frozen
``Model.Config`` and trains nothing; ``fit(train, seed=...)`` does the work; ``get_params()``
gives the parameters back as plain data.

- sequential next-item models (``lstm``, ``gru4rec``, ``sasrec``, ``tisasrec``, ``bert4rec``,
  ``jodie``, ``latentcross``) on :class:`SequentialRecommender`;
- rating-based models (``user-user``, ``item-item``, ``funksvd``, ``slope-one``, ``lightfm``)
  and adapters to LensKit (``lenskit-item-knn``, ``lenskit-user-knn``, ``lenskit-biased-mf``,
  ``lenskit-implicit-mf``) and implicit (``implicit-als``, ``implicit-bpr``,
  ``implicit-item-knn``), optional extras;
- ``recbole``: any RecBole sequential model, run in a separate RecBole environment;
- ``command``: any program, trained and queried through command templates (``_command``).

:mod:`recaudit.models.testing` is the conformance kit every model passes.
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.models._adapters import CommandError, CommandModel, LightFM, RecBoleModel
    from recaudit.models._cf import FunkSVD, ItemKNN, SlopeOne, UserKNN
    from recaudit.models._device import (check_device, process_device, resolve_device,
                                         set_process_device)
    from recaudit.models._params import Configurable
    from recaudit.models._presets import PRESETS, Preset, preset
    from recaudit.models._protocol import (Recommender, SupportsWarmStart, as_queries,
                                           checked_fit, checked_rank, rank_chunks,
                                           top_k_from_scores, warm_startable)
    from recaudit.models._registry import (available, config_class, create, model_class,
                                           parameters, register)
    from recaudit.models._scratch import scratch_dir
    from recaudit.models.sequential import (BERT4Rec, GRU4Rec, JODIE, LSTM, LatentCross, SASRec,
                                            SequentialConfig, SequentialRecommender, TiSASRec)

#: The models are registered by name and imported when first named or asked for: importing
#: :mod:`recaudit.models` imports no model, and so neither torch (a rating-based audit never
#: needs it) nor numba and scipy (a sequential one never needs those models).
__getattr__, __dir__ = exports(__name__, {
    "._adapters": ("CommandError", "CommandModel", "LightFM", "RecBoleModel"),
    "._cf": ("FunkSVD", "ItemKNN", "SlopeOne", "UserKNN"),
    "._device": ("check_device", "process_device", "resolve_device", "set_process_device"),
    "._params": ("Configurable",),
    "._presets": ("PRESETS", "Preset", "preset"),
    "._protocol": ("Recommender", "SupportsWarmStart", "as_queries", "checked_fit",
                   "checked_rank", "rank_chunks", "top_k_from_scores", "warm_startable"),
    "._registry": ("available", "config_class", "create", "model_class", "parameters",
                   "register"),
    "._scratch": ("scratch_dir",),
    ".sequential": ("BERT4Rec", "GRU4Rec", "JODIE", "LSTM", "LatentCross", "SASRec",
                    "SequentialConfig", "SequentialRecommender", "TiSASRec"),
})

__all__ = ["BERT4Rec", "CommandError", "CommandModel", "Configurable", "FunkSVD", "GRU4Rec",
           "ItemKNN", "JODIE", "LSTM", "LatentCross", "LightFM", "PRESETS", "Preset",
           "RecBoleModel", "Recommender", "SASRec", "SequentialConfig",
           "SequentialRecommender", "SlopeOne", "SupportsWarmStart", "TiSASRec", "UserKNN",
           "as_queries",
           "available", "checked_fit", "checked_rank", "check_device", "config_class",
           "create", "model_class", "parameters", "preset", "process_device", "rank_chunks",
           "register", "resolve_device", "scratch_dir", "set_process_device",
           "top_k_from_scores", "warm_startable"]
