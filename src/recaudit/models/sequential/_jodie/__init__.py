"""JODIE (Kumar, Zhang, Leskovec, KDD 2019): coupled user/item trajectories trained in
t-batches, one place for its five parts, from the model down:

- :mod:`._model`: the model (:class:`JODIE`, its network and its course through the training
  loop; the maths in its docstring), its options in :mod:`.._config` (``JODIEConfig``);
- :mod:`._tracin`: TracIn's factors over a replay of the log (Oh et al. 2022);
- :mod:`._steps`: a stack's epoch, every member's group of a step as one computation;
- :mod:`._rnn`: the coupled RNN updates of a step as one autograd node (numba on the CPU,
  torch elsewhere) and the plan it reads (:class:`~._rnn.Cascade`);
- :mod:`._plan`: the log's groups, t-batch levels and buffer slots (numba, once per fit).
"""

from recaudit.models.sequential._jodie._model import JODIE

__all__ = ["JODIE"]
