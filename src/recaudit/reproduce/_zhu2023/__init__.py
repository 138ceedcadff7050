"""Zhu, Qin, Huang, Dai, Yu, Yu, Zhang. *Understanding or Manipulation: Rethinking Online
Performance Gains of Modern Recommender Systems.* ACM TOIS 2023 (MIRROR) — Figure 7 (synthetic
decoy slates), Figure 8 (slates trained on Greedy-Oracle data), Table 3 and Figure 10 (synthetic
sequential recommendation), with :mod:`recaudit.simulate`.

Measures are means over seeds, keyed ``<algorithm>/mix<alpha>/<metric>`` for trained algorithms
(``deepfm/mix0.5/ctr``), ``<oracle>/<metric>`` for the data-collection oracles
(``planner/fctr``) and ``<policy>/round<r>/<metric>`` per interaction round (Figure 10); a
``/sd`` suffix is the standard deviation over seeds. Figures 7, 8 and 10 print no numbers: their
rows show ours only and the verdict rests on the findings stated in the text.

Readings (the paper leaves these open; see also :mod:`recaudit.simulate._topic`):

- Figure 8 is measured on AICM, a neural click model trained on TianGong-ST, neither available
  offline. We run Figure 8's protocol (Greedy Oracle as the manipulative strategy; DeepFM,
  LambdaFM, SetRank; mix ratios) on the §5.1 RRM action model instead. Its verdict says whether
  the paper's findings hold for a click model with a known decoy effect, not for AICM's users.
- The sequential scenario follows RecSim's interest-evolution rules, which the paper cites for it
  ([42, 43]); the constants it does not print are ours (:class:`recaudit.simulate.TopicConfig`).
- The sequential algorithms are trained with early stopping on 10 % of their training rows
  (patience 3, at most 50 epochs). Trained for a fixed 20 epochs, GRU memorises the sessions'
  click histories (held-out log loss rising while the training loss falls) and its held-out AUC
  ends below DNN's, the opposite of Table 3.
"""

from recaudit.reproduce._zhu2023 import _sequential, _slates

#: In the order the report shows them.
EXPERIMENTS = [*_slates.EXPERIMENTS, *_sequential.EXPERIMENTS]

__all__ = ["EXPERIMENTS"]
