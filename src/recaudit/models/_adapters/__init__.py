"""Models that live elsewhere, audited like built-in ones.

- ``command`` (:class:`CommandModel`): any program, trained and queried through command
  templates (Parquet files in and out, no shell);
- ``recbole`` (:class:`RecBoleModel`): any RecBole sequential model, run in a RecBole
  environment of its own;
- ``lightfm``, ``lenskit-*`` and ``implicit-*``: rating models of the optional libraries
  ``lightfm-next``, LensKit 2025.8.1 and implicit, on the rating-model base
  (:class:`~recaudit.models._cf.RatingRecommender`), imported when fitted.
"""

from recaudit.models._adapters._command import CommandModel
from recaudit.models._adapters._command_io import CommandError
from recaudit.models._adapters._implicit import ImplicitALS, ImplicitBPR, ImplicitItemKNN
from recaudit.models._adapters._lenskit import (LensKitBiasedMF, LensKitImplicitMF,
                                                LensKitItemKNN, LensKitUserKNN)
from recaudit.models._adapters._lightfm import LightFM
from recaudit.models._adapters._recbole import RecBoleModel

__all__ = ["CommandError", "CommandModel", "ImplicitALS", "ImplicitBPR", "ImplicitItemKNN",
           "LensKitBiasedMF", "LensKitImplicitMF", "LensKitItemKNN", "LensKitUserKNN",
           "LightFM", "RecBoleModel"]
