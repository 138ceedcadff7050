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

from recaudit.models._bert4rec import BERT4Rec
from recaudit.models._cf import FunkSVD, ItemKNN, LightFM, SlopeOne, UserKNN
from recaudit.models._command import CommandError, CommandModel
from recaudit.models._gru4rec import GRU4Rec
from recaudit.models._jodie import JODIE
from recaudit.models._latentcross import LatentCross
from recaudit.models._lstm import LSTM
from recaudit.models._nn import check_device, resolve_device, set_process_device
from recaudit.models._params import Configurable
from recaudit.models._protocol import Recommender, as_queries, top_k_from_scores
from recaudit.models._recbole import RecBoleModel
from recaudit.models._registry import available, create, model_class, register
from recaudit.models._sasrec import SASRec
from recaudit.models._sequential import SequentialConfig, SequentialRecommender
from recaudit.models._tisasrec import TiSASRec

__all__ = ["BERT4Rec", "CommandError", "CommandModel", "Configurable", "FunkSVD", "GRU4Rec",
           "ItemKNN", "JODIE", "LSTM", "LatentCross",
           "LightFM", "RecBoleModel", "Recommender", "SASRec", "SequentialConfig",
           "SequentialRecommender", "SlopeOne", "TiSASRec", "UserKNN", "as_queries", "available",
           "check_device", "create", "model_class", "register", "resolve_device",
           "set_process_device", "top_k_from_scores"]
