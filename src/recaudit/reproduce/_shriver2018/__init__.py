"""Shriver. *Assessing the Quality and Stability of Recommender Systems.* MS thesis,
University of Nebraska-Lincoln, 2018 — Tables 3.4 and 3.6 (property templates; this module)
and Tables 4.5-4.9 (influence-guided fuzzing; :mod:`._chapter4`).

Chapter 3 used MovieLens 20M (and Jester, for Table 3.5); neither is available offline. We run
the same protocol on ml-latest-small (the 2016 release: 100,004 ratings of 671 users, 9,125
movies), so counts are compared as shares of users or movies and the verdict rests on the
thesis' findings, tested as :class:`Claim` rows. Chapter 4 used MovieLens-100k, which we have.
Models: the ``@shriver2018`` presets (LensKit 3.0's Java defaults: User-User and Item-Item keep
negatively similar neighbours, FunkSVD's item biases are undamped; see
:mod:`recaudit.models._presets`).

Tolerances of the published values (a value outside them makes the verdict at best "direction
reproduced"): precision and recall within half the printed value, shares of users and of
the most rated movie's ratings 0.02, shares of movies 0.01, average ratings (ARTK) 0.25, exact
counts (NRANKS, NRTK(min), IANR, genre ranks) 0; Table 3.6's percentages within max(5, half
the printed value) points.
"""

from recaudit.reproduce._shriver2018 import _chapter3, _chapter4

#: In the order the report shows them.
EXPERIMENTS = [*_chapter3.EXPERIMENTS, *_chapter4.EXPERIMENTS]

__all__ = ["EXPERIMENTS"]
