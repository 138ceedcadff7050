"""recaudit: audit recommender systems for stability, manipulation and behavioural properties.

Subpackages (one concept each):

- :mod:`recaudit.data` — interaction logs, readers, filters, splits, datasets;
- :mod:`recaudit.metrics` — rank-list similarity and accuracy;
- :mod:`recaudit.models` — the ``Recommender`` protocol and built-in models;
- :mod:`recaudit.perturb` — training-data perturbations and their records;
- :mod:`recaudit.audit` — trials, the runner and the results store;
- :mod:`recaudit.simulate` — the MIRROR manipulation benchmark;
- :mod:`recaudit.properties` — property templates over recommendations.
"""

from recaudit.errors import ConfigError, DataError, DatasetError, RecauditError

__version__ = "0.1.0"

__all__ = ["ConfigError", "DataError", "DatasetError", "RecauditError", "__version__"]
