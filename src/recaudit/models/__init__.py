"""Recommenders: the :class:`Recommender` protocol, built-in models and the registry.

``create(name, **params)`` builds any registered model; ``available()`` lists the names.
"""

from recaudit.models._protocol import Recommender, as_queries, top_k_from_scores
from recaudit.models._registry import available, create, model_class, register

__all__ = ["Recommender", "as_queries", "available", "create", "model_class", "register",
           "top_k_from_scores"]
from recaudit.models._cf import FunkSVD, ItemKNN, LightFM, SlopeOne, UserKNN  # noqa: E402,F401
from recaudit.models._gru4rec import GRU4Rec as GRU4Rec  # noqa: E402,F401
from recaudit.models._sequential import (  # noqa: E402,F401
    SequentialConfig as SequentialConfig, SequentialRecommender as SequentialRecommender)
from recaudit.models._lstm import LSTM as LSTM  # noqa: E402,F401
from recaudit.models._sasrec import SASRec as SASRec  # noqa: E402,F401
from recaudit.models._tisasrec import TiSASRec as TiSASRec  # noqa: E402,F401
from recaudit.models._bert4rec import BERT4Rec as BERT4Rec  # noqa: E402,F401
from recaudit.models._latentcross import LatentCross as LatentCross  # noqa: E402,F401
from recaudit.models._jodie import JODIE as JODIE  # noqa: E402,F401
from recaudit.models._recbole import RecBoleModel as RecBoleModel  # noqa: E402,F401
