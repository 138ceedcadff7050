"""Rating-based collaborative-filtering recommenders (Shriver 2018 §3.4.1.1).

``"user-user"``, ``"item-item"`` (LensKit-style kNN), ``"funksvd"``, ``"slope-one"`` are
built in (numpy / scipy.sparse / numba); ``"lightfm"``, ``lenskit-*`` and ``implicit-*``
adapt other libraries on the same base (:mod:`recaudit.models._adapters`). All
rank items for the query's *user*, exclude the user's training items by default and offer
``predict(users, items)`` and the thesis' partial ``recommend(users, k)``.

Built in rather than adapted (measured on ml-latest-small, 671 users x 9,066 items, top-10 over
every unseen item for every user, same machine and load): scikit-surprise 1.1.5 ``SlopeOne``
took 12 s to fit and ~520 s to rank (extrapolated from 20 users), ``KNNWithMeans`` (user-based
cosine, k=20) ~200 s to rank, against 4.5 + 4.2 s (Slope One) and 8.3 s (User-User) here
(2026-11-27, after faster kNN kernels and rank lists: 1.3 + 1.1 s and 0.7 s);
surprise also scores pair by pair in Python and writes ``~/.surprise_data``. LensKit
2025.8.1 (the reference of User-User/Item-Item/FunkSVD) depends on an unpinned torch and
spawns worker processes for batch recommendation; its scoring rules are reproduced here and
checked against brute-force implementations of the formulas in the tests. LightFM's WARP
training is not worth re-implementing: it is adapted.
"""

from recaudit.models._cf._base import (RatingConfig, RatingRecommender, count_matrix,
                                      rating_matrix)
from recaudit.models._cf._funksvd import FunkSVD
from recaudit.models._cf._knn import ItemKNN, UserKNN
from recaudit.models._cf._slopeone import SlopeOne

__all__ = ["FunkSVD", "ItemKNN", "RatingConfig", "RatingRecommender", "SlopeOne", "UserKNN",
           "count_matrix", "rating_matrix"]
