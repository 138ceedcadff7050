"""Adapter to RecBole's sequential models, run in a separate Python (a worker process).

RecBole 1.2.1 does not run in recaudit's environment: it needs ``numpy<2``, ``pandas<3`` and
``setuptools<81``, pins ``ray<=2.6.3``, and loads checkpoints in a way torch's ``weights_only``
default refuses (see DEPENDENCIES.md). Patching RecBole is out of scope, so the adapter talks
to RecBole in *another* interpreter: set ``python=`` or the environment variable
``RECAUDIT_RECBOLE_PYTHON`` to a Python that has ``recbole==1.2.1`` and ``numpy<2``, e.g.::

    python3 -m venv /opt/recbole && /opt/recbole/bin/pip install torch==2.13.0 \\
        "recbole==1.2.1" "numpy<2" "pandas<3" "setuptools<81"
    export RECAUDIT_RECBOLE_PYTHON=/opt/recbole/bin/python

``create("recbole", model="SASRec", epochs=5, params={"hidden_size": 64})`` then wraps any
RecBole sequential model by name. ``fit`` writes the training log as RecBole's pre-augmented
atomic files (``benchmark_filename`` train/valid/test: one line per training target with its
preceding ``MAX_ITEM_LIST_LENGTH`` items, exactly RecBole's own augmentation, so RecBole trains
on our training set and splits nothing), runs the worker with ``seed`` and
``reproducibility=True`` forwarded (RecBole seeds its global RNGs inside the worker process,
never ours), and keeps the trained state;
``rank`` asks the worker for ``full_sort_predict`` scores of the queries' contexts (most recent
``MAX_ITEM_LIST_LENGTH`` items, mapped to RecBole's internal ids) and ranks them with
:func:`top_k_from_scores`. Items RecBole never saw in training score lowest (float32 minimum)
and keep the catalogue order among themselves; context items it never saw are dropped.

Not supported: RecBole's general/context-aware models (they need other input fields), its
evaluation loop (recaudit evaluates), and loss settings that need negative sampling are left to
``params`` (default ``loss_type="CE"``, ``train_neg_sample_args=None``).
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.data import Interactions, Queries, RankLists
from recaudit.config import Config
from recaudit.errors import ConfigError, DataError, RecauditError
from recaudit.models._params import Configurable
from recaudit.models._protocol import as_queries, top_k_from_scores
from recaudit.models._registry import register
from recaudit.models._scratch import make_workspace, pack_workspace, unpack_workspace

__all__ = ["RecBoleModel", "recbole_python", "time_recbole_epoch"]

_WORKER = Path(__file__).with_name("_recbole_worker.py")


def recbole_python(explicit: str | None = None) -> str | None:
    """The interpreter that runs RecBole: ``explicit``, else ``$RECAUDIT_RECBOLE_PYTHON``."""
    py = explicit or os.environ.get("RECAUDIT_RECBOLE_PYTHON")
    return py or None


@dataclass(frozen=True)
class RecBoleConfig(Config):
    """model: RecBole model name (e.g. ``"SASRec"``, ``"GRU4Rec"``). epochs: training epochs.
    params: extra RecBole config keys (validated by RecBole in the worker; ``worker_threads``
    sets the worker's torch threads). python: interpreter with RecBole (default
    ``$RECAUDIT_RECBOLE_PYTHON``). exclude_seen: drop context items from lists.
    timeout: seconds allowed for one worker call."""

    model: str = "SASRec"
    epochs: int = 50
    params: dict = field(default_factory=dict)
    python: str | None = None
    exclude_seen: bool = False
    timeout: float = 3600.0

    def validate(self) -> None:
        if not self.model:
            raise self.invalid("model", "must be a RecBole model name, e.g. 'SASRec'")
        if self.epochs < 1:
            raise self.invalid("epochs", f"must be an integer >= 1, got {self.epochs!r}")
        for key in ("seed", "epochs", "model", "dataset", "data_path", "benchmark_filename"):
            if key in self.params:
                raise self.invalid("params", f"params[{key!r}] is set by recaudit; remove it")


def _job_paths(job: Path) -> dict[str, str]:
    """The RecBole config keys that point into the job directory ``job``."""
    return {"data_path": str(job / "data"), "checkpoint_dir": str(job / "saved")}


def _prefix_samples(train: Interactions, max_len: int) -> list[str]:
    """RecBole's pre-augmented sequential format: header + one line per training target,
    ``user <TAB> preceding items (at most max_len, oldest first) <TAB> target``."""
    indptr, rows = train.user_sequences()
    items = train.item[rows].tolist()
    out = ["user_id:token\titem_id_list:token_seq\titem_id:token\n"]
    for u in range(train.n_users):
        lo, hi = int(indptr[u]), int(indptr[u + 1])
        for t in range(lo + 1, hi):
            ctx = " ".join(map(str, items[max(lo, t - max_len):t]))
            out.append(f"{u}\t{ctx}\t{items[t]}\n")
    return out


def _run_worker(python: str, job: Path, timeout: float) -> dict:
    env = dict(os.environ, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD="1")
    proc = subprocess.run([python, str(_WORKER), str(job)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=job)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-3000:]
        raise RecauditError(f"RecBole worker ({python}) failed with exit code "
                            f"{proc.returncode}:\n{tail}")
    return json.loads((job / "result.json").read_text())


@register("recbole")
class RecBoleModel(Configurable):
    """Any RecBole 1.2.1 sequential model, trained and queried in a worker process."""

    Config = RecBoleConfig

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._job: Path | None = None
        self._finalizer: Any = None

    def close(self) -> None:
        """Remove the worker's job directory (data files, trained state)."""
        if self._finalizer is not None:
            self._finalizer()
        self._job = self._finalizer = None

    def __getstate__(self) -> dict[str, Any]:
        # the trained state is the job directory's files: a copy carries them (see _scratch)
        state = {k: v for k, v in self.__dict__.items() if k not in ("_job", "_finalizer")}
        if self._job is not None:
            state["_files"] = pack_workspace(self._job)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        files = state.pop("_files", None)
        self.__dict__.update(state, _job=None, _finalizer=None)
        if files is not None:
            job, self._finalizer = unpack_workspace(self, "recaudit-recbole-", files)
            spec = json.loads((job / "job.json").read_text())
            spec["config"].update(_job_paths(job))  # the worker reads its files from here
            (job / "job.json").write_text(json.dumps(spec))
            self._job = job

    def _python(self) -> str:
        py = recbole_python(self.config.python)
        if py is None:
            raise ConfigError("the RecBole adapter needs a Python with recbole==1.2.1 and "
                              "numpy<2: set RECAUDIT_RECBOLE_PYTHON or python=... (see "
                              "recaudit.models._adapters._recbole)")
        return py

    def fit(self, train: Interactions, *, seed: int) -> RecBoleModel:
        if not isinstance(train, Interactions):
            raise TypeError(f"train must be Interactions, got {type(train).__name__}")
        python = self._python()
        self.close()
        # under the store's directory during an audit (see recaudit.models._scratch)
        job, self._finalizer = make_workspace(self, "recaudit-recbole-")
        self._job = job
        data = job / "data" / "rl"
        data.mkdir(parents=True)
        max_len = int(self.config.params.get("MAX_ITEM_LIST_LENGTH", 50))
        lines = _prefix_samples(train, max_len)
        if len(lines) == 1:
            raise DataError("recbole: no user has two or more training interactions",
                            source=train.name)
        (data / "rl.train.inter").write_text("".join(lines))
        # valid/test: a copy of one training sample (RecBole needs non-empty files; unused)
        (data / "rl.valid.inter").write_text(lines[0] + lines[-1])
        (data / "rl.test.inter").write_text(lines[0] + lines[-1])
        cfg = {"loss_type": "CE", "train_neg_sample_args": None, **self.config.params,
               "seed": int(seed), "reproducibility": True, "epochs": self.config.epochs,
               **_job_paths(job), "dataset": "rl",
               "benchmark_filename": ["train", "valid", "test"], "show_progress": False,
               "alias_of_item_id": ["item_id_list"],
               "load_col": {"inter": ["user_id", "item_id_list", "item_id"]},
               "log_wandb": False}
        (job / "job.json").write_text(json.dumps({"action": "fit", "model": self.config.model,
                                                  "n_items": train.n_items, "config": cfg}))
        self.result_ = _run_worker(python, job, self.config.timeout)
        self.n_items_ = train.n_items
        self.max_len_ = int(self.result_["max_len"])
        self.seconds_per_epoch_ = float(self.result_["seconds"]) / self.config.epochs
        self.cpu_seconds_per_epoch_ = float(self.result_["cpu_seconds"]) / self.config.epochs
        return self

    def score(self, queries: Queries | Interactions) -> np.ndarray:
        if self._job is None:
            raise RuntimeError("RecBoleModel is not fitted; call fit(train, seed=...)")
        q = as_queries(queries, max_len=self.max_len_)
        items, _ = q.padded(self.max_len_)
        job = self._job
        np.save(job / "context.npy", items)  # right-aligned, -1 padded, our item codes
        spec = json.loads((job / "job.json").read_text())
        spec["action"] = "score"
        (job / "job.json").write_text(json.dumps(spec))
        _run_worker(self._python(), job, self.config.timeout)
        scores = np.load(job / "scores.npy")  # [n, n_items] in our codes (NaN = unknown item)
        low = np.finfo(np.float32).min
        return np.where(np.isnan(scores), low, scores).astype(np.float32)

    def rank(self, queries: Queries | Interactions, k: int | None = None) -> RankLists:
        scores = self.score(queries)
        if self.config.exclude_seen:
            q = as_queries(queries, max_len=self.max_len_)
            scores[np.repeat(np.arange(len(q)), q.lengths()), q.context_item] = -np.inf
        return top_k_from_scores(scores, k)


def time_recbole_epoch(name: str, train: Interactions, *, epochs: int = 1,
                       threads: int = 2) -> tuple[float, float]:
    """(wall, process-CPU) seconds per training epoch of RecBole's ``name`` (sasrec|gru4rec)
    with its default architecture on ``train`` (used by ``benchmarks/bench_training.py``)."""
    model = {"sasrec": "SASRec", "gru4rec": "GRU4Rec"}[name]
    m = RecBoleModel(model=model, epochs=epochs, params={"worker_threads": threads})
    m.fit(train, seed=0)
    return m.seconds_per_epoch_, m.cpu_seconds_per_epoch_
