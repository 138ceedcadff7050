"""From audit to remedy: methods that make a model's rank lists more stable.

- ``finest`` — FINEST rank-preserving fine-tuning under simulated perturbations (Oh, Ustun,
  McAuley & Kumar 2024), for the sequential models trained by the shared loop (``lstm``,
  ``gru4rec``, ``sasrec``, ``tisasrec``, ``bert4rec``, ``latentcross``): :class:`Finest`;
- ``ensemble`` — seed ensembles, the mean score of ``n`` models trained with different seeds
  (Francomano, Siciliano & Silvestri 2024), for any model with ``score``: :class:`SeedEnsemble`;
- further methods plug in with :func:`register_method` (see :mod:`._protocol`).

In an audit a stabilised model is a model spec: ``stabilise = {method = "finest", ...}`` in a
``[[models]]`` table (:class:`recaudit.experiment.ModelSpec`), so the same perturbations, seeds
and metrics measure it beside the plain model in one store, under its own trial ids; the
report's "Stabilisation" section pairs the two. In Python::

    from recaudit.models import create
    from recaudit.stabilise import stabilise
    model = stabilise(lambda: create("sasrec", epochs=20), {"method": "finest", "epochs": 10})
    model.fit(train, seed=0).rank(queries, k=10)
"""

from recaudit.stabilise._ensemble import EnsembleConfig, SeedEnsemble, member_seed
from recaudit.stabilise._finest import Finest, FinestConfig
from recaudit.stabilise._finest_parts import (Reference, match_rows, rank_preserving_loss,
                                              reference_lists, simulate)
from recaudit.stabilise._protocol import (Anchor, Method, method, methods, parse,
                                          register_method, stabilise)

__all__ = ["Anchor", "EnsembleConfig", "Finest", "FinestConfig", "Method", "Reference",
           "SeedEnsemble", "match_rows", "member_seed", "method", "methods", "parse",
           "rank_preserving_loss", "reference_lists", "register_method", "simulate",
           "stabilise"]
