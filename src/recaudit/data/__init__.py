"""Interaction logs and everything that turns raw files into audit-ready splits.

- :class:`Interactions` — the immutable columnar log (dense ``int32`` codes + id maps);
- :class:`Queries` — next-item test queries built from the original data;
- :class:`RankLists` — what a model answers;
- readers/writers, validation, filters, splits, the dataset registry, the synthetic generator.
"""

from recaudit.data._filters import compact, filter_min_interactions, k_core, sample_users
from recaudit.data._interactions import DEFAULT_COLUMNS, Interactions, pair_keys
from recaudit.data._queries import Queries
from recaudit.data._ranklists import RankLists
from recaudit.data._splits import (
    Split,
    global_temporal_split,
    holdout_last,
    leave_last_out,
    queries_for_rows,
    split,
    temporal_ratio_split,
)
from recaudit.data._synthetic import SyntheticConfig, synthetic

__all__ = ["DEFAULT_COLUMNS", "Interactions", "Queries", "RankLists", "Split", "SyntheticConfig",
           "compact", "filter_min_interactions", "global_temporal_split", "holdout_last",
           "k_core", "leave_last_out", "pair_keys", "queries_for_rows", "sample_users", "split",
           "synthetic", "temporal_ratio_split"]

# readers, writers, validation and the dataset registry
from recaudit.data import datasets  # noqa: E402
from recaudit.data._published import (  # noqa: E402
    read_foursquare_tsmc,
    read_jester,
    read_jodie,
    read_movielens,
    read_recbole,
    read_release_years,
    read_tsv_shared,
)
from recaudit.data._plain import read_csv, read_parquet, write_csv, write_parquet  # noqa: E402
from recaudit.data._detect import FORMATS, detect_format, read  # noqa: E402
from recaudit.data._frames import validate_frame  # noqa: E402
from recaudit.data._ranked_rows import RankedRowsError, order_ranked_rows  # noqa: E402
from recaudit.data._text import head_lines, sniff_delimiter  # noqa: E402
from recaudit.data._time import date_only, duration_text, epoch_seconds, time_text  # noqa: E402

__all__ += ["FORMATS", "RankedRowsError", "date_only", "datasets", "detect_format",
            "duration_text", "epoch_seconds", "head_lines", "time_text",
            "order_ranked_rows", "read", "read_csv", "read_foursquare_tsmc", "read_jester",
            "read_jodie", "read_movielens", "read_parquet", "read_recbole",
            "read_release_years", "read_tsv_shared", "sniff_delimiter", "validate_frame",
            "write_csv", "write_parquet"]
