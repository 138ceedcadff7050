"""Training-data perturbations as pure seeded functions ``(Interactions, rng) -> (Interactions, record)``.

- edits (seed 000 sections 5-6): :func:`delete_rows`, :func:`insert_after`,
  :func:`replace_items` with new-item strategies ``random`` / ``popular`` / ``unpopular``;
- selectors: random, earliest-random, latest-random, CASPER (:func:`casper_scores`), TracIn
  (:func:`tracin_scores`, :class:`SupportsTracIn`), Rev.Adv. (:func:`select_rev_adv`);
- position removal and seed-only (seed 003): :func:`remove_positions`, :func:`seed_only`;
- :class:`PerturbationRecord`: exactly what changed; ``record.apply(original)`` redoes it;
- :class:`PerturbationSpec` and :func:`parse` (``"casper-replace-popular"``), :func:`available`.
"""

from recaudit.perturb._casper import casper_error_bound, casper_graph, casper_scores
from recaudit.perturb._edits import STRATEGIES, delete_rows, insert_after, replace_items
from recaudit.perturb._position import POSITIONS, remove_positions, seed_only
from recaudit.perturb._record import PerturbationRecord
from recaudit.perturb._revadv import craft_fake_user, select_rev_adv
from recaudit.perturb._selectors import (select_casper, select_earliest_random,
                                         select_latest_random, select_random, top_k)
from recaudit.perturb._spec import EDITS, SELECTORS, PerturbationSpec, available, parse
from recaudit.perturb._tracin import SupportsTracIn, tracin_scores

__all__ = [
    "EDITS", "POSITIONS", "SELECTORS", "STRATEGIES", "PerturbationRecord", "PerturbationSpec",
    "SupportsTracIn", "available", "casper_error_bound", "casper_graph", "casper_scores",
    "craft_fake_user", "delete_rows", "insert_after", "parse", "remove_positions",
    "replace_items", "seed_only", "select_casper", "select_earliest_random",
    "select_latest_random", "select_random", "select_rev_adv", "top_k", "tracin_scores",
]
