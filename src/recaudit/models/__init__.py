"""Recommenders: the :class:`Recommender` protocol, built-in models and the registry.

``create(name, **params)`` builds any registered model; ``available()`` lists the names.
"""

from recaudit.models._protocol import Recommender, as_queries, top_k_from_scores
from recaudit.models._registry import available, create, model_class, register

__all__ = ["Recommender", "as_queries", "available", "create", "model_class", "register",
           "top_k_from_scores"]
