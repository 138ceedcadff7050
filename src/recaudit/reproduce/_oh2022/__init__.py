"""Oh, Ustun, McAuley, Kumar. *Rank List Sensitivity of Recommender Systems to Interaction
Perturbations.* CIKM 2022 — Table 3, Figure 3, Table 4, Figures 5-7, Figure 8.

Data: Foursquare and Wikipedia as the authors released them (``../shared/data`` or the dataset
registry), users with fewer than 10 interactions removed, the last ``int(0.1 n)`` interactions
of each user tested (CASPER's code; split ``floor = "test"``). Models: the ``@oh2022`` presets.
Their "RBO" is average overlap over the full ranking (the ``rbo`` package's default p = 1);
we compare average overlap (``average_overlap``) with their numbers and show RBO (p = 0.9) beside it.
CASPER reads the latest 50 interactions per user for LSTM and TiSASRec and all interactions for
JODIE and LatentCross (§7.1.4). TracIn takes each model's last layer (JODIE's: its prediction
layer) with checkpoints every 10 epochs. LastFM and Reddit are not available offline.

Scales: ``paper`` = the presets (50 epochs), all users, 3 seeds. ``small`` (2 CPU cores, about
an hour per experiment): a seeded sample of users, fewer epochs, fewer seeds, JODIE in groups
of 512 interactions instead of 500 time spans (see :data:`SCALES`); the absolute levels then
differ from the paper's, the comparisons between methods are what the verdict checks.
"""

from recaudit.reproduce._oh2022 import _figures, _tables
from recaudit.reproduce._oh2022._common import (LOO, MODELS, PAPER, REPLACE, SCALES, _configs,
                                                _run_audits)
from recaudit.reproduce._oh2022._tables import _POS, _T4

#: In the order the report shows them.
EXPERIMENTS = [
    *(e for e in _tables.EXPERIMENTS if e.name == "oh2022-table3"),
    *(e for e in _figures.EXPERIMENTS if e.name == "oh2022-figure3"),
    *(e for e in _tables.EXPERIMENTS if e.name == "oh2022-table4"),
    *(e for e in _figures.EXPERIMENTS if e.name != "oh2022-figure3"),
]

__all__ = ["EXPERIMENTS", "LOO", "MODELS", "PAPER", "REPLACE", "SCALES", "_POS", "_T4",
           "_configs", "_run_audits"]
