"""recaudit: audit recommender systems for stability, manipulation and behavioural properties.

Subpackages (one concept each), from the top layer down; a layer imports only layers below it:

- :mod:`recaudit.cli` — the ``recaudit`` command;
- :mod:`recaudit.report` — the papers' tables and figures from a results file;
- the studies: :mod:`recaudit.audit` (rank-list stability, Oh et al. 2022 and Betello et al.
  2023), :mod:`recaudit.fuzz` (influence-guided fuzzing, Shriver 2018),
  :mod:`recaudit.properties` (property templates, Shriver 2018), :mod:`recaudit.simulate`
  (MIRROR, Zhu et al. 2023);
- :mod:`recaudit.runs` — exported rank lists of other tools (TREC, CSV/Parquet, RecBole),
  read and compared (:func:`compare_runs`);
- :mod:`recaudit.experiment` — what the studies share: specs, trial ids, data loading,
  executors and the results store;
- :mod:`recaudit.perturb` — training-data perturbations, their protocol and registry;
- :mod:`recaudit.models` and :mod:`recaudit.metrics` — recommenders and rank-list measures;
- :mod:`recaudit.data` — interaction logs, readers, filters, splits, datasets;
- :mod:`recaudit.config`, :mod:`recaudit.errors`, :mod:`recaudit.seeds` — the configuration
  convention, errors and warnings, seeds as data.
"""

from recaudit._memory import keep_freed_memory
from recaudit._version import __version__
from recaudit.errors import ConfigError, DataError, DatasetError, RecauditError, RecauditWarning

__all__ = ["ConfigError", "DataError", "DatasetError", "RecauditError", "RecauditWarning",
           "__version__", "compare_runs", "keep_freed_memory"]


def __getattr__(name: str):
    # lazy: `import recaudit` stays light (pandas and the metric kernels load on first use)
    if name == "compare_runs":
        from recaudit.runs import compare_runs

        return compare_runs
    raise AttributeError(f"module 'recaudit' has no attribute {name!r}")
