"""The experiment layer every study (audit, fuzz, properties, simulate) runs on.

- specs shared by studies: :class:`DatasetSpec`, :class:`SplitSpec`, :class:`ModelSpec`,
  :class:`ExecutorSpec` (frozen :class:`~recaudit.config.Config` dataclasses);
- ids: :func:`canonical_json` and :func:`spec_id` (a trial's id hashes its spec and its data);
- data: :func:`load_dataset`, :func:`prepare` (load, filter, split; memoised per process);
- executors: :func:`execute` (in-process, process pool with devices, Ray), and
  :func:`run_pending` (run what a store does not hold yet, write as results arrive);
- the results store: :class:`Store`, owning every table through the declarations of
  :mod:`recaudit.experiment._schema` (:data:`TABLES`, :data:`QUERY_METRICS`).

Layering: studies import this package; it imports ``models``, ``data`` and the root modules
(``config``, ``errors``, ``seeds``), never a study.
"""

from recaudit.experiment._data import data_summary, load_dataset, prepare, read_dataset
from recaudit.experiment._executors import execute
from recaudit.experiment._ids import canonical_json, spec_id
from recaudit.experiment._run import run_pending
from recaudit.experiment._schema import FUZZ_DISTANCES, QUERY_METRICS, TABLES, Column, Table
from recaudit.experiment._specs import DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec
from recaudit.experiment._store import Store, StoreBusyError

__all__ = ["FUZZ_DISTANCES", "QUERY_METRICS", "TABLES", "Column", "DatasetSpec", "ExecutorSpec",
           "ModelSpec", "SplitSpec", "Store", "StoreBusyError", "Table", "canonical_json",
           "data_summary", "execute", "load_dataset", "prepare", "read_dataset", "run_pending",
           "spec_id"]
