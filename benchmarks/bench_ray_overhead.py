"""Per-trial overhead of the Ray executor against trial time, on a simulated two-node cluster.

A head node without CPUs (the driver's) and two worker nodes of one CPU each
(``ray.cluster_utils.Cluster``, all on this machine: "transfers" between nodes are copies
between their object stores through the loopback network, not a real network). Measured:

1. scheduling: a no-op task's round trip (submit, lease a worker, run, return), one at a time;
2. a worker's imports (torch, numba, recaudit), once per worker process;
3. dataset hand-off: a worker on the other node resolving the driver's reference to an
   interaction log and installing it (fingerprint check); once per worker process;
4. baseline hand-off: a task on node B resolving rank lists made by a task on node A
   (``queries x depth`` int32), once per trial of the group;
5. result: a trial's per-query rows (``queries`` rows, 16 columns) returned to the driver
   (beyond the round trip and the time to build them);
6. driver: writing one such trial to the store (one transaction; serial on the driver);
7. a trial itself, in-process (GRU4Rec on a synthetic log; the baseline already cached);
8. end to end: the same small audit in-process and on the two nodes.

    python benchmarks/bench_ray_overhead.py           # about three minutes on 2 busy cores
    python benchmarks/bench_ray_overhead.py --quick   # smaller sizes, one minute
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import numpy as np
import pandas as pd

MB = 2**20


def _noop() -> None:
    return None


def _make_lists(n: int, depth: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.integers(0, 2**31 - 1, size=(n, depth), dtype=np.int32)


def _resolve(refs: list) -> float:
    import ray

    t0 = time.perf_counter()
    value = ray.get(refs[0])
    _ = value.sum() if isinstance(value, np.ndarray) else value
    return time.perf_counter() - t0


def _install(refs: list) -> float:
    import ray

    from recaudit.experiment._data import install_dataset

    t0 = time.perf_counter()
    key, fingerprint, data = ray.get(refs[0])
    install_dataset(key, data, fingerprint)
    return time.perf_counter() - t0


def _imports() -> float:
    t0 = time.perf_counter()
    import recaudit.audit  # noqa: F401  (torch, numba, recaudit: a fresh worker's first trial)

    return time.perf_counter() - t0


def _rows(n: int) -> pd.DataFrame:
    from recaudit.experiment import QUERY_METRICS

    rng = np.random.default_rng(1)
    cols = {"query": np.arange(n), "user": np.arange(n), "target": np.arange(n)}
    cols.update({m: rng.random(n) for m in QUERY_METRICS})
    return pd.DataFrame(cols)


def _median(f, repeat: int) -> float:
    return statistics.median(f() for _ in range(repeat))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    queries, depth = (3000, 1000) if args.quick else (15000, 1000)
    log_users = 2000 if args.quick else 20000

    short = tempfile.mkdtemp(prefix="rb", dir="/tmp")
    # A busy machine may take over a minute to start a worker (Ray's default timeout: 60 s).
    os.environ.update(RAY_TMPDIR=short, HOME=short, RAY_worker_register_timeout_seconds="900")
    import ray
    from ray.cluster_utils import Cluster
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy as On

    from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, MetricSpec, ModelSpec,
                                Store, run_audit)
    from recaudit.data import synthetic

    c = Cluster(initialize_head=True, head_node_args=dict(num_cpus=0, include_dashboard=False,
                                                          object_store_memory=300 * MB))
    a, b = (c.add_node(num_cpus=1, object_store_memory=300 * MB) for _ in range(2))
    rows: list[tuple[str, str, float]] = []
    try:
        ray.init(address=c.address, log_to_driver=False)
        c.wait_for_nodes()
        noop = ray.remote(num_cpus=1)(_noop)
        ray.get([noop.remote() for _ in range(4)])  # start the workers
        lat = _median(lambda: _timed(lambda: ray.get(noop.remote())), 30)
        rows.append(("scheduling: no-op task round trip", "per trial", lat))

        imports = ray.remote(num_cpus=1)(_imports).options(
            scheduling_strategy=On(a.node_id, False))
        rows.append(("worker start: importing torch and recaudit", "per worker process",
                     ray.get(imports.remote())))

        log = synthetic(seed=0, n_users=log_users, n_items=2000, mean_length=50)
        fp = log.fingerprint()
        payload = ray.put(("bench", fp, log))
        size = sum(x.nbytes for x in (log.user, log.item, log.timestamp)) / MB
        install = ray.remote(num_cpus=1)(_install).options(scheduling_strategy=On(b.node_id, False))
        first = ray.get(install.remote([payload]))
        rows.append((f"dataset hand-off: {len(log):,} interactions ({size:.0f} MB), driver -> "
                     "node, install", "per worker process", first))

        make = ray.remote(num_cpus=1)(_make_lists).options(scheduling_strategy=On(a.node_id, False))
        resolve = ray.remote(num_cpus=1)(_resolve).options(scheduling_strategy=On(b.node_id, False))
        samples = []
        for _ in range(3):
            lists = make.remote(queries, depth)
            ray.wait([lists], fetch_local=False)
            samples.append(ray.get(resolve.remote([lists])))
            del lists
        rows.append((f"baseline hand-off: {queries:,} x {depth} rank lists "
                     f"({queries * depth * 4 / MB:.0f} MB), node A -> node B",
                     "per trial (cross-node)", statistics.median(samples)))

        frame = _rows(queries)
        build = _median(lambda: _timed(lambda: _rows(queries)), 5)
        ret = ray.remote(num_cpus=1)(_rows)
        back = _median(lambda: _timed(lambda: ray.get(ret.remote(queries))), 5) - lat - build
        rows.append((f"result: {queries:,} per-query rows to the driver (beyond the round trip)",
                     "per trial", back))

        from recaudit.audit import run_trial  # noqa: F401  (import cost outside the timing)

        with Store(os.path.join(short, "w.duckdb")) as st:
            row = {"trial_id": "t", "status": "done", "n_queries": queries}
            write = []
            for i in range(5):
                row["trial_id"] = f"t{i}"
                write.append(_timed(lambda: st.write_trial(row, frame, {"kind": "x"})))
        rows.append((f"driver: store write of {queries:,} query rows", "per trial (serial)",
                     statistics.median(write)))

        data = DatasetSpec("synthetic", options={"n_users": 500, "n_items": 300, "seed": 3})
        model = ModelSpec("gru4rec", {"epochs": 3, "embedding_dim": 32, "hidden_dim": 32})
        perts = ("random-delete", "seed-only", "none", "latest-random-delete")

        def audit(out: str, **ex) -> float:
            cfg = AuditConfig(models=(model,), perturbations=perts, seeds=(0, 1),
                              datasets=(data,), metrics=MetricSpec(k=10), output=out,
                              executor=ExecutorSpec(**ex))
            t0 = time.perf_counter()
            run_audit(cfg)
            return time.perf_counter() - t0

        inproc = audit(os.path.join(short, "a.duckdb"))
        with Store(os.path.join(short, "a.duckdb"), read_only=True) as st:
            t = st.trials()
        trial = float(t.nsmallest(len(t) - 2, "fit_seconds").total_seconds.median())
        rows.append(("trial (GRU4Rec, 500 users, 3 epochs; baseline cached), in-process",
                     "anchor", trial))
        on_ray = audit(os.path.join(short, "b.duckdb"), kind="ray", address=c.address)
        rows.append(("end to end: 8 trials + 2 baselines, in-process", "audit", inproc))
        rows.append(("end to end: the same on 2 nodes x 1 CPU", "audit", on_ray))
    finally:
        ray.shutdown()
        c.shutdown()
        shutil.rmtree(short, ignore_errors=True)
    # The anchor of every ratio: the in-process trial, measured above in this run.
    print(f"anchor: one trial in-process = {trial:.3f} s (ratios below are seconds / anchor)\n")
    print("| measured | paid | seconds | / trial |\n|---|---|---:|---:|")
    for name, paid, secs in rows:
        print(f"| {name} | {paid} | {secs:.3f} | {secs / trial:.3f} |")
    per_trial = sum(secs for name, paid, secs in rows if paid.startswith("per trial"))
    write = next(secs for name, paid, secs in rows if name.startswith("driver"))
    print(f"\nper-trial overhead on Ray (rows paid per trial): {per_trial:.3f} s = "
          f"{per_trial / trial:.3f} x the trial")
    print("model: N nodes run N trials at a time, so a trial costs (trial + overhead) / N of "
          "wall time, and never less than the serial store write: speed-up(N) = "
          "min(N * trial / (trial + overhead), trial / write) = "
          + ", ".join(f"{n}: {min(n * trial / (trial + per_trial), trial / write):.1f}"
                      for n in (2, 8, 32)))
    print(f"speed-up measured end to end: {inproc / on_ray:.2f} on 2 single-CPU nodes "
          f"(this machine: {os.cpu_count()} cores, shared; includes starting the workers and "
          f"training the baselines)")


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
