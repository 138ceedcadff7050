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

from recaudit.models._adapters import CommandError, CommandModel, LightFM, RecBoleModel
from recaudit.models._cf import FunkSVD, ItemKNN, SlopeOne, UserKNN
from recaudit.models._device import (check_device, process_device, resolve_device,
                                     set_process_device)
from recaudit.models._params import Configurable
from recaudit.models._presets import PRESETS, Preset, preset
from recaudit.models._protocol import (Recommender, as_queries, checked_fit, checked_rank,
                                       top_k_from_scores)
from recaudit.models._registry import available, create, model_class, parameters, register
from recaudit.models._scratch import scratch_dir

if TYPE_CHECKING:  # at run time reached through __getattr__, below
    from recaudit.models.sequential import (BERT4Rec, GRU4Rec, JODIE, LSTM, LatentCross, SASRec,
                                            SequentialConfig, SequentialRecommender, TiSASRec)

#: Names this package offers from :mod:`recaudit.models.sequential`, imported on first use:
#: importing :mod:`recaudit.models` does not import torch (a rating-based audit never needs it).
_SEQUENTIAL = ("BERT4Rec", "GRU4Rec", "JODIE", "LSTM", "LatentCross", "SASRec",
               "SequentialConfig", "SequentialRecommender", "TiSASRec")


def __getattr__(name: str) -> object:
    if name in _SEQUENTIAL:
        from recaudit.models import sequential

        return getattr(sequential, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = ["BERT4Rec", "CommandError", "CommandModel", "Configurable", "FunkSVD", "GRU4Rec",
           "ItemKNN", "JODIE", "LSTM", "LatentCross", "LightFM", "PRESETS", "Preset",
           "RecBoleModel", "Recommender", "SASRec", "SequentialConfig",
           "SequentialRecommender", "SlopeOne", "TiSASRec", "UserKNN", "as_queries",
           "available", "checked_fit", "checked_rank", "check_device", "create", "model_class",
           "parameters", "preset", "process_device", "register", "resolve_device",
           "scratch_dir", "set_process_device", "top_k_from_scores"]
