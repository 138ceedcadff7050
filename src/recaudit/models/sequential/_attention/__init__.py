"""The self-attention models, each in its own module, and what they share:

- :mod:`._sasrec`: SASRec (Kang & McAuley, ICDM 2018);
- :mod:`._tisasrec`: TiSASRec (Li, Wang & McAuley, WSDM 2020), time-interval aware;
- :mod:`._bert4rec`: BERT4Rec (Sun et al., CIKM 2019), bidirectional with the Cloze loss;
- :mod:`._blocks`: the pre-LN block layers SASRec and TiSASRec build on and the N(0, 0.02)
  initialisation of all three.

Their options are in :mod:`.._config` (``SASRecConfig``, ``TiSASRecConfig``,
``BERT4RecConfig``).
"""

from recaudit.models.sequential._attention._bert4rec import BERT4Rec
from recaudit.models.sequential._attention._sasrec import SASRec
from recaudit.models.sequential._attention._tisasrec import TiSASRec

__all__ = ["BERT4Rec", "SASRec", "TiSASRec"]
