"""Interaction logs and everything that turns raw files into audit-ready splits.

- :class:`Interactions` — the immutable columnar log (dense ``int32`` codes + id maps);
- :class:`Queries` — next-item test queries built from the original data;
- :class:`RankLists` — what a model answers;
- readers/writers, validation, filters, splits, the dataset registry, the synthetic generator.
"""

from recaudit.data._interactions import DEFAULT_COLUMNS, Interactions
from recaudit.data._queries import Queries
from recaudit.data._ranklists import RankLists

__all__ = ["DEFAULT_COLUMNS", "Interactions", "Queries", "RankLists"]
