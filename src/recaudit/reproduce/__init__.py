"""Reproducing the papers' experiments: their published values beside ours, with verdicts.

>>> from recaudit import reproduce
>>> [e.name for e in reproduce.available()][:2]
['oh2022-table3', 'oh2022-figure3']
>>> record = reproduce.run("oh2022-table4", scale="small")      # doctest: +SKIP
>>> reproduce.write_report("results/reproduce", "docs/reproduction.md")  # doctest: +SKIP

Each experiment (:class:`Experiment`) names its paper, artefacts (tables, figures), data and
scales, the published :class:`Value` rows and the paper's :class:`Claim` rows; ``run`` writes
a record (measures, comparison, verdict, machine, wall time) that ``write_report`` renders.
Command line: ``recaudit reproduce list | run NAME [--scale small|paper] | report``.
"""

from recaudit.reproduce._experiment import (VERDICTS, Claim, Experiment, Scope, Value,
                                            verdict)
from recaudit.reproduce._report import render_report, write_report
from recaudit.reproduce._runs import DEFAULT_ROOT, available, get, load_record, run

__all__ = ["DEFAULT_ROOT", "VERDICTS", "Claim", "Experiment", "Scope", "Value",
           "available", "get", "load_record", "render_report", "run", "verdict", "write_report"]
