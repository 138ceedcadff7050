"""LatentCross (Beutel et al., WSDM 2018): a GRU whose inputs and outputs are crossed with
the time between events, in three parts:

- :mod:`._model`: the model (:class:`LatentCross`, its network; the maths and the sample
  layouts in its docstring), its options in :mod:`.._config` (``LatentCrossConfig``);
- :mod:`._histories`: training over whole histories (``samples = "history"``, Oh et al.
  2022's setting): a stack's groups of a step as one pass;
- :mod:`._levels`: the members' packed sequences as padded levels, one batched GRU for all.
"""

from recaudit.models.sequential._latentcross._model import LatentCross

__all__ = ["LatentCross"]
