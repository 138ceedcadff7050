"""The sequential next-item models and the machinery they share.

Every model here is a :class:`SequentialRecommender`: it encodes a user's context and scores
the catalogue ``s = h W^T (+ b)``, trained by the same loop (temporal or shuffled mini-batches
of :class:`SequenceData` samples, seeded initialisation and dropout). The public pieces are the
seams for code that trains or fine-tunes these models without reaching into them:
:meth:`SequentialRecommender.instance_scores` (the training loss of a mini-batch and the
next-item scores of its instances), :meth:`SequentialRecommender.query_scores`,
:class:`SequenceData` / :class:`Batch` (samples and mini-batches), :func:`batch_from_queries`,
:func:`make_adam` and :func:`set_dropout_generator`.

Models: ``lstm`` (:class:`LSTM`), ``gru4rec``, ``sasrec``, ``tisasrec``, ``bert4rec``,
``latentcross`` (window, prefix or whole-history samples) and ``jodie`` (coupled user/item
trajectories in t-batches).
"""

from recaudit.models.sequential._base import SequentialRecommender, fit_stack
from recaudit.models.sequential._config import SequentialConfig
from recaudit.models.sequential._bert4rec import BERT4Rec
from recaudit.models.sequential._gru4rec import GRU4Rec
from recaudit.models.sequential._jodie import JODIE
from recaudit.models.sequential._latentcross import LatentCross
from recaudit.models.sequential._lstm import LSTM
from recaudit.models.sequential._nn import SequenceNet, make_adam, set_dropout_generator
from recaudit.models.sequential._samples import Batch, SequenceData, batch_from_queries
from recaudit.models.sequential._sasrec import SASRec
from recaudit.models.sequential._tisasrec import TiSASRec

__all__ = ["BERT4Rec", "Batch", "GRU4Rec", "JODIE", "LSTM", "LatentCross", "SASRec",
           "SequenceData", "SequenceNet", "SequentialConfig", "SequentialRecommender", "TiSASRec",
           "batch_from_queries", "fit_stack", "make_adam", "set_dropout_generator"]
