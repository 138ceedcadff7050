"""Audits on a multi-node Ray cluster simulated on this machine (``ray.cluster_utils.Cluster``).

The head node has no CPU, so every task runs on one of the worker nodes. Every worker process
starts (``worker_process_setup_hook``) in a fresh empty working directory with an empty data
cache and no mirror, and cannot load a dataset itself (``read_dataset`` raises), so the data can
only arrive through the object store; no baseline directory exists on any disk unless
``cache_uri`` names one. The hook also leaves a marker file for every baseline trained and every
trial started or finished, with its node: the counts the tests assert.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.ray  # `make test` runs tests/ray alone, after the others
if " " in sys.executable:  # Ray's workers cannot start (recaudit.experiment._ray)
    pytest.skip("Ray cannot start workers from a Python path with a space",
                allow_module_level=True)


from ray.cluster_utils import Cluster  # noqa: E402

from recaudit.audit import (AuditConfig, DatasetSpec, ExecutorSpec, MetricSpec, ModelSpec,  # noqa: E402
                            AuditStore, run_audit, trial_summary)
from recaudit.data import synthetic  # noqa: E402
from recaudit.errors import ConfigError  # noqa: E402
from recaudit.experiment import execute  # noqa: E402
from recaudit.experiment._ray import gpu_device  # noqa: E402

MB = 2**20
TIMEOUT = "RAY_worker_register_timeout_seconds"
GCS_WAIT = "RAY_gcs_server_port_wait_time_s"
NODE = dict(num_cpus=1, object_store_memory=100 * MB)
MODEL = ModelSpec("gru4rec", {"epochs": 2, "embedding_dim": 8, "hidden_dim": 8, "batch_size": 64})


def _isolate(markers: str):
    """The workers' setup hook (shipped by value: workers cannot import this test module)."""
    def hook() -> None:
        import os
        import tempfile
        import time
        import uuid

        import ray

        import recaudit.audit._study as engine
        import recaudit.audit._baselines as baselines
        import recaudit.experiment._data as data

        home = tempfile.mkdtemp(prefix="worker-", dir=markers + "/../workers")
        os.chdir(home)
        os.environ["RECAUDIT_DATA"] = home + "/cache"
        os.environ["RECAUDIT_MIRROR"] = ""

        def mark(kind: str, label: str) -> None:
            node = ray.get_runtime_context().get_node_id()
            with open(f"{markers}/{kind}.{node}.{os.getpid()}.{uuid.uuid4().hex}", "w") as fh:
                fh.write(label)

        def no_read(spec):
            raise RuntimeError(f"a worker read {spec.label} from its own disk")

        def counted_baseline(trial, split, *rest, _real=baselines.train_baseline):
            mark("baseline", f"{trial.model.name}|{trial.seed}")
            return _real(trial, split, *rest)

        def hold(label: str) -> None:
            """The kill tests: the first trial to start writes its node and label to
            ``markers/hold`` and waits there (at most five minutes) until its node is killed;
            every other trial, the held one's retry included, runs on."""
            tmp = f"{markers}/../hold.{uuid.uuid4().hex}"
            with open(tmp, "w") as fh:
                fh.write(f"{ray.get_runtime_context().get_node_id()} {label}")
            try:
                os.link(tmp, markers + "/hold")  # atomic: only the first trial gets it
            except FileExistsError:
                return
            finally:
                os.unlink(tmp)
            time.sleep(300)

        def marked_trial(trial, *args, _real=engine.run_trial, **kw):
            label = f"{trial.seed}|{trial.perturbation}"
            mark("start", label)
            if os.path.exists(markers + "/../hold-one"):
                hold(label)
            out = _real(trial, *args, **kw)
            mark("end", label)
            return out

        data.read_dataset = no_read
        baselines.train_baseline = counted_baseline
        engine.run_trial = marked_trial

    return hook


def _markers(directory: Path, kind: str) -> list[tuple[str, str]]:
    """``(node id, label)`` of every marker of ``kind``."""
    return [(p.name.split(".")[1], p.read_text()) for p in directory.glob(f"{kind}.*")]


def _end_processes_under(directory: str) -> None:
    """SIGKILL this user's processes whose command line names ``directory`` (the fixture's own
    temporary directory: Ray's daemons of this test cluster only)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if proc.stat().st_uid != os.getuid():
                continue
            if directory.encode() in (proc / "cmdline").read_bytes():
                os.kill(int(proc.name), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # ended meanwhile, or not ours


@pytest.fixture(scope="module")
def cluster():
    """Head (no CPU) and two worker nodes of one CPU each; Ray's files in a short temp dir."""
    short = tempfile.mkdtemp(prefix="rc", dir="/tmp")
    # Ray exports variables of its own (RAY_AUTH_MODE=token with the token under this HOME, when
    # unset): the whole environment is restored afterwards. Authentication is off for every Ray
    # test of the suite, as one process's Ray sessions must agree on it (tests/audit/
    # test_local.py starts one too: a token under one HOME would not be found under the other).
    saved = dict(os.environ)
    for k in ("RAY_USAGE_STATS_ENABLED", "PYTHONBREAKPOINT"):
        os.environ.pop(k, None)
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # A busy machine (nice 19 under load) may take minutes to start a worker process: Ray's
    # default (60 s) would kill and restart it for ever; its GCS server may likewise need more
    # than the default 30 s to bind its port (seen with a load of 5 on 2 cores).
    os.environ.update(RAY_TMPDIR=short, HOME=short, **{TIMEOUT: "900", GCS_WAIT: "600"})
    # A node killed outright is declared dead after failed health checks: Ray's defaults (every
    # 3 s, 5 failures) left the dead-node test waiting 15 s whenever the driver learnt of the
    # death from the GCS rather than from the node; every second, 3 failures, is 3 s. A check
    # of a live node still waits up to Ray's default 10 s for its answer, so a loaded machine
    # does not lose a slow node.
    os.environ.update(RAY_health_check_period_ms="1000", RAY_health_check_failure_threshold="3")
    root = Path(short)
    (root / "markers").mkdir()
    (root / "workers").mkdir()
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    c = None
    try:
        c = Cluster(initialize_head=True, head_node_args=dict(
            num_cpus=0, object_store_memory=100 * MB, include_dashboard=False))
        nodes = [c.add_node(**NODE) for _ in range(2)]
        ray.init(address=c.address, log_to_driver=False,
                 runtime_env={"worker_process_setup_hook": _isolate(str(root / "markers"))})
        c.wait_for_nodes()
        yield c, nodes, root / "markers"
    finally:
        ray.shutdown()
        if c is not None:
            c.shutdown()
        _end_processes_under(short)  # what a node that failed to start left running
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(short, ignore_errors=True)


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    """The dataset: a CSV on the driver's disk only (workers may not read it)."""
    path = tmp_path_factory.mktemp("driver") / "log.csv"
    synthetic(seed=5, n_users=40, n_items=30, n_clusters=4, mean_length=14).to_csv(path)
    return DatasetSpec("tiny", path=str(path))


def _config(data, output, **executor):
    return AuditConfig(models=(MODEL,), perturbations=("none", "random-delete", "seed-only"),
                       seeds=(0, 1), datasets=(data,), metrics=MetricSpec(k=5),
                       output=str(output), executor=ExecutorSpec(**executor))


def _numbers(path):
    s = trial_summary(path)
    return s.drop(columns=["fit_seconds", "total_seconds"]).sort_values("trial_id") \
        .reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(data_file, tmp_path_factory):
    """The same audit in-process (the numbers every cluster run must reproduce bit for bit)."""
    out = tmp_path_factory.mktemp("ref") / "ref.duckdb"
    run_audit(_config(data_file, out))
    return _numbers(out)


def _clear(markers: Path) -> None:
    for p in markers.iterdir():
        p.unlink()


def test_cluster_audit_is_identical_and_trains_each_baseline_once(cluster, data_file,
                                                                  reference, tmp_path):
    c, _, markers = cluster
    _clear(markers)
    out = tmp_path / "b.duckdb"
    run_audit(_config(data_file, out, kind="ray", address=c.address))
    pd.testing.assert_frame_equal(_numbers(out), reference, check_exact=True)
    baselines = sorted(label for _, label in _markers(markers, "baseline"))
    assert baselines == ["gru4rec|0", "gru4rec|1"]  # one per (model, seed), none twice
    assert len(_markers(markers, "end")) == 6
    assert not Path(str(out) + ".baselines").exists()  # nothing went through the driver's disk

    # stacks on Ray: each stack one task, its baseline shared as an object reference
    _clear(markers)
    out = tmp_path / "stacked.duckdb"
    run_audit(_config(data_file, out, kind="ray", address=c.address, workers=2, stack=2))
    pd.testing.assert_frame_equal(_numbers(out), reference, check_exact=True)
    assert sorted(label for _, label in _markers(markers, "baseline")) == ["gru4rec|0",
                                                                          "gru4rec|1"]

    # cache_uri: baselines kept where every node reaches them; a new audit retrains none.
    cache = tmp_path / "shared-mount" / "baselines"
    for i, trained in ((1, 2), (2, 0)):
        _clear(markers)
        out = tmp_path / f"c{i}.duckdb"
        run_audit(_config(data_file, out, kind="ray", address=c.address, cache_uri=str(cache)))
        pd.testing.assert_frame_equal(_numbers(out), reference, check_exact=True)
        assert len(_markers(markers, "baseline")) == trained
        assert len(list(cache.glob("*.npz"))) == 2


def _probe(i: int, barrier: str | None = None, slots: int = 0) -> dict:
    """A stand-in trial: what the worker was given, and when it ran. With ``barrier`` (a
    directory) it waits until ``slots`` trials have started (or five minutes), so that every
    trial Ray lets run at once does run at once, however slowly workers start."""
    import os
    import time
    import uuid

    import torch

    from recaudit.models import process_device

    start = time.time()
    if barrier is not None:
        open(os.path.join(barrier, uuid.uuid4().hex), "w").close()
        while len(os.listdir(barrier)) < slots and time.time() - start < 300:
            time.sleep(0.05)
        time.sleep(0.5)
    return {"i": i, "start": start, "end": time.time(), "gpus": ray.get_gpu_ids(),
            "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "device": process_device(),
            "threads": torch.get_num_threads()}


def test_fractional_gpus_pack_trials_and_set_their_device(cluster, tmp_path):
    """A node with 12 CPUs and 2 (declared) GPUs: the CPUs would run six trials of two threads
    at once, but gpus_per_trial = 0.5 runs at most two per GPU, each on the GPU Ray gave it
    (cuda:0 of its CUDA_VISIBLE_DEVICES); no GPU reserved: CPU."""
    c, _, _ = cluster
    gpu_node = c.add_node(num_cpus=12, num_gpus=2, object_store_memory=100 * MB)
    try:
        c.wait_for_nodes()
        spec = ExecutorSpec("ray", address=c.address, gpus_per_trial=0.5, threads_per_worker=2)
        got = list(execute(_probe, [(i, str(tmp_path), 4) for i in range(6)], spec))
        with pytest.raises(ConfigError) as err:
            list(execute(_probe, [(0,)], ExecutorSpec("ray", address=c.address,
                                                      gpus_per_trial=3)))
        assert err.value.key == "gpus_per_trial"
        cpu = list(execute(_probe, [(0,)], ExecutorSpec("ray", address=c.address)))
    finally:
        c.remove_node(gpu_node)
    assert sorted(r["i"] for r in got) == list(range(6))
    for r in got:
        assert len(r["gpus"]) == 1 and r["gpus"][0] in (0, 1)
        assert r["visible"] == str(r["gpus"][0]) and r["device"] == "cuda:0"
        assert r["threads"] == 2
    events = sorted([(r["start"], 1, r["gpus"][0]) for r in got]
                    + [(r["end"], -1, r["gpus"][0]) for r in got])
    running = {0: 0, 1: 0}
    peak = {0: 0, 1: 0}
    for _, step, gpu in events:
        running[gpu] += step
        peak[gpu] = max(peak[gpu], running[gpu])
    assert peak == {0: 2, 1: 2}  # two trials shared each GPU, never three
    assert cpu[0]["device"] == "cpu" and cpu[0]["gpus"] == []


def test_gpu_device_is_the_position_among_the_visible_gpus():
    assert gpu_device([3], "3") == "cuda:0"
    assert gpu_device(["2"], "0,2") == "cuda:1"
    assert gpu_device([1], None) == "cuda:1"  # nothing hidden: the physical index
    with pytest.raises(Exception, match="hides it"):
        gpu_device([1], "0")
    with pytest.raises(Exception, match="no GPU"):
        gpu_device([], "0")


def _kill_held_node(c, nodes, markers: Path) -> tuple[str, str]:
    """Kill the node of the held trial as a dying machine would: its worker processes
    (SIGKILL) and its Ray processes at once. Its node id and the held trial's label."""
    node_id, label = (markers / "hold").read_text().split(" ", 1)
    node = next(n for n in nodes if n.node_id == node_id)
    for path in markers.glob(f"*.{node_id}.*"):
        try:
            os.kill(int(path.name.split(".")[2]), signal.SIGKILL)
        except ProcessLookupError:
            pass
    c.remove_node(node, allow_graceful=False)
    return node_id, label


def _audit_killing_a_node(c, nodes, markers, config) -> tuple[str, str]:
    """Run ``config``, killing the node that runs the held trial (the first to start, which
    never finishes on its own) as soon as another trial has finished."""
    killed: list[tuple[str, str]] = []

    def progress(event, trial, done, total):
        if event == "done" and not killed:
            killed.append(_kill_held_node(c, nodes, markers))

    flag = markers.parent / "hold-one"
    flag.touch()
    try:
        run_audit(config, progress=progress)
    except Exception as exc:
        assert killed, f"the audit failed before a node was killed: {exc!r}"
        raise
    finally:
        flag.unlink()
    assert killed, "no trial finished"
    return killed[0]


def _consistent(path) -> pd.DataFrame:
    """Every stored trial has all its query rows and nothing else is stored."""
    with AuditStore(path, read_only=True) as st:
        trials, q = st.trials(), st.query_results()
    assert set(q.trial_id) == set(trials.trial_id)
    sizes = q.groupby("trial_id").size().to_dict()
    assert sizes == dict(zip(trials.trial_id, trials.n_queries))
    return trials


@pytest.mark.slow
def test_killing_a_node_mid_audit_loses_nothing(cluster, data_file, reference, tmp_path):
    c, nodes, markers = cluster
    _clear(markers)
    spare = c.add_node(**NODE)  # the nodes this test may kill: the others stay for the rest
    busy = [n for n in nodes if n in c.worker_nodes] + [spare]
    out = tmp_path / "k.duckdb"
    node, label = _audit_killing_a_node(
        c, busy, markers, _config(data_file, out, kind="ray", address=c.address, retries=2))
    pd.testing.assert_frame_equal(_numbers(out), reference, check_exact=True)
    _consistent(out)
    starts = _markers(markers, "start")
    assert (node, label) in starts
    ran_again = [n for n, lab in starts if lab == label and n != node]
    assert len(ran_again) == 1  # the killed trial ran again, on another node
    ends = sorted(lab for _, lab in _markers(markers, "end"))
    assert len(ends) == 6 and len(set(ends)) == 6  # every other trial ran once
    nodes[:] = [n for n in busy if n.node_id != node]


@pytest.mark.slow
def test_without_retries_a_dead_node_fails_the_run_which_resumes(cluster, data_file,
                                                                 reference, tmp_path):
    c, nodes, markers = cluster
    _clear(markers)
    nodes.append(c.add_node(**NODE))
    out = tmp_path / "r.duckdb"
    with pytest.raises(ray.exceptions.RayError):
        _audit_killing_a_node(c, nodes, markers,
                              _config(data_file, out, kind="ray", address=c.address, retries=0))
    kept = _consistent(out)
    assert len(kept) == len(_markers(markers, "end"))  # every trial that finished was stored
    assert len(kept) < 6
    run_audit(_config(data_file, out, kind="ray", address=c.address))  # a restarted driver
    _consistent(out)
    pd.testing.assert_frame_equal(_numbers(out), reference, check_exact=True)
