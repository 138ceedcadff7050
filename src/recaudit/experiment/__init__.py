"""The experiment layer every study (audit, fuzz, properties, simulate) runs on.

- specs shared by studies: :class:`DatasetSpec`, :class:`SplitSpec`, :class:`ModelSpec`,
  :class:`ExecutorSpec` (frozen :class:`~recaudit.config.Config` dataclasses);
- ids: :func:`canonical_json` and :func:`spec_id`; a trial's id hashes its *identity* and its
  data: :func:`identity` (declared fields, versioned: :data:`ID_VERSION`), :func:`trial_key`,
  and :func:`migrate_ids` for a store written under an older version;
- data: :func:`load_dataset`, :func:`prepare` (load, filter, split; memoised per process);
- studies: the :class:`Study` protocol (a kind of experiment declares its trials, its
  tables and how one trial runs and is written) and :func:`run_study`, which plans, runs on
  an executor, resumes, writes and publishes progress the same way for every study, and
  cuts a group's trials into stacks (:func:`stacks`, ``executor.stack``) for a study that
  trains several together;
  :class:`StudyInfo`: what readers (``status``, ``results``, the report) need of a study;
- executors: :func:`execute` (in-process, process pool with devices, Ray), and
  :func:`run_pending` (run what a store does not hold yet, write as results arrive); Ctrl-C
  or SIGTERM stops a run at once and quietly (a pool's workers ignore SIGINT; the driver
  stops them) with :class:`~recaudit.errors.Interrupted`, a failed trial with
  :class:`~recaudit.errors.TrialError`, a refused write with
  :class:`~recaudit.errors.StorageError`;
- the results store: :class:`Store`, holding the tables the studies declare
  (:class:`Table`, :func:`register`) and this layer's own (``meta``, ``plans``);
  :func:`merge_stores` makes stores filled on several machines one, and
  :func:`shared_trials` says whether the trials two stores both hold agree (:class:`Agreement`).

Layering: studies import this package; it imports ``models``, ``data`` and the root modules
(``config``, ``errors``, ``seeds``), never a study.
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit._ids import canonical_json, spec_id
    from recaudit.experiment._cache import ArrayCache
    from recaudit.experiment._data import (data_summary, load_dataset, prepare, read_dataset,
                                           split_log)
    from recaudit.experiment._executors import execute
    from recaudit.experiment._heartbeat import Heartbeat, fits_dir, heartbeats, kept_fits
    from recaudit.experiment._identity import (ID_VERSION, identity, migrate_ids,
                                               store_id_version, trial_key)
    from recaudit.experiment._merge import Agreement, merge_stores, shared_trials
    from recaudit.experiment._run import Stacked, run_pending
    from recaudit.experiment._schema import (META, PLANS, TABLES, Column, Table, columns,
                                             register)
    from recaudit.experiment._specs import DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec
    from recaudit.experiment._store import Store, StoreBusyError
    from recaudit.experiment._study import (Study, StudyInfo, Trial, progress_path,
                                            read_progress, run_study, stacks)

__getattr__, __dir__ = exports(__name__, {
    "recaudit._ids": ("canonical_json", "spec_id"),
    "._cache": ("ArrayCache",),
    "._data": ("data_summary", "load_dataset", "prepare", "read_dataset", "split_log"),
    "._executors": ("execute",),
    "._heartbeat": ("Heartbeat", "fits_dir", "heartbeats", "kept_fits"),
    "._identity": ("ID_VERSION", "identity", "migrate_ids", "store_id_version", "trial_key"),
    "._merge": ("Agreement", "merge_stores", "shared_trials"),
    "._run": ("Stacked", "run_pending"),
    "._schema": ("META", "PLANS", "TABLES", "Column", "Table", "columns", "register"),
    "._specs": ("DatasetSpec", "ExecutorSpec", "ModelSpec", "SplitSpec"),
    "._store": ("Store", "StoreBusyError"),
    "._study": ("Study", "StudyInfo", "Trial", "progress_path", "read_progress", "run_study",
                "stacks"),
})

__all__ = ["ID_VERSION", "META", "PLANS", "TABLES", "Agreement", "ArrayCache", "Column", "DatasetSpec", "ExecutorSpec",
           "Heartbeat", "fits_dir", "heartbeats", "kept_fits",
           "ModelSpec", "SplitSpec", "Stacked", "Store", "StoreBusyError", "Study", "StudyInfo",
           "Table",
           "Trial", "canonical_json", "columns", "data_summary", "execute", "identity", "load_dataset",
           "merge_stores", "migrate_ids", "prepare", "progress_path", "read_dataset", "read_progress",
           "register", "run_pending", "run_study", "shared_trials", "spec_id", "split_log", "stacks",
           "store_id_version", "trial_key"]
