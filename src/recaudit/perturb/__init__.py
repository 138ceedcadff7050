"""Training-data perturbations as pure seeded functions ``(Interactions, rng) -> (Interactions, record)``.

- edits (Oh et al. 2022, sections 5-6): :func:`delete_rows`, :func:`insert_after`,
  :func:`replace_items` with new-item strategies ``random`` / ``popular`` / ``unpopular``;
- selectors: random, earliest-random, latest-random, CASPER (:func:`casper_scores`; what an
  edit reaches: :func:`casper_descendants`), TracIn
  (:func:`tracin_scores`, :class:`SupportsTracIn`), Rev.Adv. (:func:`select_rev_adv`);
- position removal and seed-only (Betello et al. 2023): :func:`remove_positions`,
  :func:`seed_only`;
- a retrain as a perturbation: :func:`remove_last` (the training log without its last
  window, :func:`parse_window`; its :class:`RetrainRecord`), named ``remove-last-7d``,
  ``remove-last-5%`` and ``remove-last-7d+warm`` (:class:`RetrainSpec`);
- :class:`PerturbationRecord`: exactly what changed; ``record.apply(original)`` redoes it;
- :class:`PerturbationSpec` (``parse("casper-replace-popular")``), the built-in family;
- the protocol every family follows (:class:`Perturbation`: :class:`Needs`,
  :class:`Description`, :class:`Context`) and the registry of families by name prefix
  (:func:`register_family`, :func:`parse`, :func:`available`, :func:`catalogue`: every name
  with a line in words, ``recaudit perturbations list``); :mod:`recaudit.fuzz` registers
  ``fuzz:``.
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports
from recaudit.perturb import _catalogue, _registry, _spec

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.perturb._casper import casper_error_bound, casper_graph, casper_scores
    from recaudit.perturb._descendants import casper_descendants
    from recaudit.perturb._edits import (STRATEGIES, delete_rows, insert_after, neighbours,
                                         replace_items)
    from recaudit.perturb._position import POSITIONS, remove_positions, seed_only
    from recaudit.perturb._protocol import Context, Description, Needs, Perturbation
    from recaudit.perturb._record import PerturbationRecord
    from recaudit.perturb._registry import (ENTRY_POINTS, Entry, Family, available, catalogue,
                                            families, parse, register_family)
    from recaudit.perturb._retrain import (RetrainRecord, Window, parse_window, remove_last,
                                           time_order_only)
    from recaudit.perturb._revadv import craft_fake_user, select_rev_adv
    from recaudit.perturb._selectors import (select_casper, select_earliest_random,
                                             select_latest_random, select_random, top_k)
    from recaudit.perturb._spec import (EDITS, SELECTORS, EditSpec, PerturbationSpec,
                                        PositionSpec, ReferenceSpec, RetrainSpec)
    from recaudit.perturb._tracin import SupportsTracIn, tracin_scores

__getattr__, __dir__ = exports(__name__, {
    "._casper": ("casper_error_bound", "casper_graph", "casper_scores"),
    "._descendants": ("casper_descendants",),
    "._edits": ("STRATEGIES", "delete_rows", "insert_after", "neighbours", "replace_items"),
    "._position": ("POSITIONS", "remove_positions", "seed_only"),
    "._protocol": ("Context", "Description", "Needs", "Perturbation"),
    "._record": ("PerturbationRecord",),
    "._registry": ("ENTRY_POINTS", "Entry", "Family", "available", "catalogue", "families",
                   "parse", "register_family"),
    "._retrain": ("RetrainRecord", "Window", "parse_window", "remove_last", "time_order_only"),
    "._revadv": ("craft_fake_user", "select_rev_adv"),
    "._selectors": ("select_casper", "select_earliest_random", "select_latest_random",
                    "select_random", "top_k"),
    "._spec": ("EDITS", "SELECTORS", "EditSpec", "PerturbationSpec", "PositionSpec",
               "ReferenceSpec", "RetrainSpec"),
    "._tracin": ("SupportsTracIn", "tracin_scores"),
})

# the built-in family: its names are read without numba, pandas or the edits themselves
_registry.register_family("", parse=_spec.parse_name, from_dict=_spec.from_dict, examples=_spec.examples,
                          describe=_catalogue.describe, title=_catalogue.TITLE)

__all__ = ["EDITS", "ENTRY_POINTS", "POSITIONS", "SELECTORS", "STRATEGIES", "Context",
           "Description", "EditSpec", "Entry", "Family", "Needs", "Perturbation",
           "PerturbationRecord", "PerturbationSpec", "PositionSpec", "ReferenceSpec",
           "RetrainRecord", "RetrainSpec", "SupportsTracIn", "Window", "available",
           "casper_descendants", "casper_error_bound",
           "catalogue", "casper_graph", "casper_scores", "craft_fake_user", "delete_rows",
           "families", "insert_after", "neighbours", "parse", "parse_window", "register_family",
           "remove_last", "remove_positions", "replace_items", "seed_only", "select_casper",
           "select_earliest_random", "select_latest_random", "select_random", "select_rev_adv",
           "time_order_only", "top_k", "tracin_scores"]
