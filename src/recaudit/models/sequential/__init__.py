"""The sequential next-item models and the machinery they share.

Every model here is a :class:`SequentialRecommender`: it encodes a user's context and scores
the catalogue ``s = h W^T (+ b)``, trained by the same loop (temporal or shuffled mini-batches
of :class:`SequenceData` samples, seeded initialisation and dropout). The public pieces are the
seams for code that trains or fine-tunes these models without reaching into them:
:meth:`SequentialRecommender.instance_scores` (the training loss of a mini-batch and the
next-item scores of its instances), :meth:`SequentialRecommender.query_scores`,
:class:`SequenceData` / :class:`Batch` (samples and mini-batches), :func:`batch_from_queries`,
:func:`make_adam` and :func:`set_dropout_generator`. :func:`resumable` makes the fits started
inside keep their state at an epoch's end and resume from it (a fit of hours survives a kill:
``with resumable("fits"): model.fit(train, seed=0)``; the audit's workers train inside it).

Where each model lives: ``lstm`` and ``gru4rec`` (one module each, ``_lstm``, ``_gru4rec``);
``sasrec``, ``tisasrec`` and ``bert4rec`` (``_attention``: a module each and the block they
share); ``latentcross`` (``_latentcross``: window, prefix or whole-history samples) and
``jodie`` (``_jodie``: coupled user/item trajectories in t-batches). The modules beside them are
what every model shares: the model base (``_base``), the options of every model (``_config``,
no torch), the training loop (``_train``, ``_course``, ``_epochs``, ``_resume``), samples and
mini-batches (``_samples``), the stacked layers (``_stack``, ``_nn``, ``_draws``), log-order
groups (``_history``, JODIE's and LatentCross's) and TracIn's factors (``_factors``).
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.models.sequential._base import SequentialRecommender, fit_stack
    from recaudit.models.sequential._config import (BERT4RecConfig, GRU4RecConfig, JODIEConfig,
                                                    LatentCrossConfig, LSTMConfig, SASRecConfig,
                                                    SequentialConfig, TiSASRecConfig)
    from recaudit.models.sequential._attention import BERT4Rec, SASRec, TiSASRec
    from recaudit.models.sequential._gru4rec import GRU4Rec
    from recaudit.models.sequential._jodie import JODIE
    from recaudit.models.sequential._latentcross import LatentCross
    from recaudit.models.sequential._lstm import LSTM
    from recaudit.models.sequential._nn import SequenceNet, make_adam, set_dropout_generator
    from recaudit.models.sequential._samples import Batch, SequenceData, batch_from_queries
    from recaudit._resume import resumable

#: Each model's options live apart from its network (``_config``: no torch), so a model's name
#: and parameters are checked without importing torch (:func:`recaudit.models.config_class`);
#: a model is imported when it is first asked for.
__getattr__, __dir__ = exports(__name__, {
    "._base": ("SequentialRecommender", "fit_stack"),
    "._config": ("BERT4RecConfig", "GRU4RecConfig", "JODIEConfig", "LatentCrossConfig",
                 "LSTMConfig", "SASRecConfig", "SequentialConfig", "TiSASRecConfig"),
    "._attention": ("BERT4Rec", "SASRec", "TiSASRec"),
    "._gru4rec": ("GRU4Rec",),
    "._jodie": ("JODIE",),
    "._latentcross": ("LatentCross",),
    "._lstm": ("LSTM",),
    "._nn": ("SequenceNet", "make_adam", "set_dropout_generator"),
    "._samples": ("Batch", "SequenceData", "batch_from_queries"),
    "recaudit._resume": ("resumable",),
})

__all__ = ["BERT4Rec", "BERT4RecConfig", "Batch", "GRU4Rec", "GRU4RecConfig", "JODIE",
           "JODIEConfig", "LSTM", "LSTMConfig", "LatentCross", "LatentCrossConfig", "SASRec",
           "SASRecConfig", "SequenceData", "SequenceNet", "SequentialConfig",
           "SequentialRecommender", "TiSASRec", "TiSASRecConfig", "batch_from_queries",
           "fit_stack", "make_adam", "resumable", "set_dropout_generator"]
