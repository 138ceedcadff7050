"""Reproducing the papers' experiments: their published values beside ours, with verdicts.

>>> from recaudit import reproduce
>>> [e.name for e in reproduce.available()][:2]
['oh2022-table3', 'oh2022-figure3']
>>> record = reproduce.run("oh2022-table4", scale="small")      # doctest: +SKIP
>>> reproduce.write_report("results/reproduce", "docs/reproduction.md")  # doctest: +SKIP

Each experiment (:class:`Experiment`) names its paper, artefacts (tables, figures), data and
scales, the published :class:`Value` rows and the paper's :class:`Claim` rows (rules of tested
comparisons, :mod:`recaudit.reproduce.rules`); ``run`` writes a record (measures, samples,
comparison, verdict, machine, wall time) that ``write_report`` renders; the samples are kept
compact (``write_samples`` / ``read_samples``; ``compact_records`` migrates older records).
Command line: ``recaudit reproduce list | run NAME [--scale small|paper] | report | compact``.
"""

from recaudit.reproduce._experiment import (CLAIM_STATES, OTHER_DATA_STATES,
                                            OTHER_DATA_VERDICTS, VERDICTS, Claim, Experiment,
                                            Measures, Value, evaluate_claims, verdict)
from recaudit.reproduce._report import render_report, write_report
from recaudit.reproduce._samples import read_samples, write_samples
from recaudit.reproduce._scope import Scope
from recaudit.reproduce._verdicts import listed_verdict
from recaudit.reproduce._queue import QUEUE, QueueItem, run_queue
from recaudit.reproduce._recording import (DEFAULT_RECORDS, DEFAULT_ROOT, STOPPED, available,
                                      compact_records, evaluate, get, judge, load_measures,
                                      load_record, plan, run, sequential_plan)

__all__ = ["CLAIM_STATES", "DEFAULT_RECORDS", "DEFAULT_ROOT", "OTHER_DATA_STATES", "QUEUE",
           "QueueItem", "STOPPED", "run_queue",
           "OTHER_DATA_VERDICTS", "VERDICTS", "Claim",
           "Experiment", "Measures", "Scope", "Value", "available", "evaluate",
           "compact_records", "evaluate_claims", "get", "judge", "listed_verdict", "load_measures",
           "load_record", "plan",
           "read_samples", "render_report", "run", "sequential_plan", "verdict", "write_report",
           "write_samples"]
