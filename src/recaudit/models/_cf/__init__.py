"""Rating-based collaborative-filtering recommenders (seed 004 §3.4.1.1).

``"user-user"``, ``"item-item"`` (LensKit-style kNN), ``"funksvd"``, ``"slope-one"`` are
built in (numpy / scipy.sparse / numba); ``"lightfm"`` adapts the optional ``lightfm-next``
package (imported when the model is fitted). All rank items for the query's *user*, exclude the
user's training items by default and offer ``predict(users, items)`` and the thesis' partial
``recommend(users, k)``.
"""

from recaudit.models._cf._base import RatingRecommender, rating_matrix
from recaudit.models._cf._funksvd import FunkSVD
from recaudit.models._cf._knn import ItemKNN, UserKNN
from recaudit.models._cf._lightfm import LightFM
from recaudit.models._cf._slopeone import SlopeOne

__all__ = ["FunkSVD", "ItemKNN", "LightFM", "RatingRecommender", "SlopeOne", "UserKNN",
           "rating_matrix"]
