"""MIRROR as a study: one trial per seed of a :class:`MirrorConfig`, through the experiment
layer (:func:`recaudit.experiment.run_study`: any executor, resumable, progress beside the
store), into the tables of :mod:`._results`."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

from recaudit.experiment import ExecutorSpec, Store, Table, Trial, canonical_json, spec_id
from recaudit.simulate._results import MIRROR_RESULTS, MIRROR_TRIALS, ROW
from recaudit.simulate._runner import MirrorConfig, run_mirror

__all__ = ["MirrorStudy"]


def _run_seed(config: MirrorConfig) -> dict[str, Any]:
    """One trial: the rows of a one-seed run (pure: same config, same rows)."""
    t0 = time.perf_counter()
    rows = run_mirror(config)
    return {"config": config, "rows": rows, "seconds": time.perf_counter() - t0}


class MirrorStudy:
    """The MIRROR benchmark of ``config`` as a :class:`~recaudit.experiment.Study`: one trial
    per seed, written to ``output``, run by ``workers`` processes (1: in this process) or any
    ``executor``."""

    kind: ClassVar[str] = "mirror"
    tables: ClassVar[tuple[Table, ...]] = (MIRROR_TRIALS, MIRROR_RESULTS)
    run: ClassVar[Callable[..., Any]] = staticmethod(_run_seed)
    share: ClassVar[Callable[..., Any] | None] = None
    prime: ClassVar[Callable[..., Any] | None] = None

    def __init__(self, config: MirrorConfig, output: str | Path, *, workers: int = 1,
                 executor: ExecutorSpec | None = None) -> None:
        self.config = config
        self.output = Path(output)
        self.executor = executor or ExecutorSpec("process" if workers > 1 else "inprocess",
                                                 workers)

    def seed_configs(self) -> list[MirrorConfig]:
        return [dataclasses.replace(self.config, seeds=(s,)) for s in self.config.seeds]

    def plan(self) -> list[Trial]:
        return [Trial(spec_id(c.to_dict()), c, label=f"MIRROR · seed {c.seeds[0]}")
                for c in self.seed_configs()]

    def facts(self) -> dict[str, Any]:
        return {"mirror.config": self.config.to_dict()}

    def write(self, store: Store, outcome: dict[str, Any]) -> str:
        import pandas as pd

        cfg: MirrorConfig = outcome["config"]
        tid = spec_id(cfg.to_dict())
        df = pd.DataFrame(outcome["rows"], columns=ROW).assign(trial_id=tid)
        with store.transaction():
            # a trial's rows are its own: replaced by its id, never by (scenario, algorithm,
            # mix, seed), which two configurations sharing a store (Zhu et al. 2023's decoy
            # and greedy figures: the same algorithms, mixes and seeds) would both write
            store.replace_rows(MIRROR_RESULTS, df, ("trial_id",))
            store.insert(MIRROR_TRIALS, [{
                "trial_id": tid, "scenario": cfg.scenario, "seed": cfg.seeds[0],
                "config": canonical_json(cfg.to_dict()), "n_rows": len(df),
                "seconds": outcome["seconds"], "finished": time.time()}], replace=True)
        return tid
