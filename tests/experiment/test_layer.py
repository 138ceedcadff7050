"""Ids, shared specs, data loading and executors of the experiment layer."""

import hashlib
import json

import numpy as np
import pytest

from recaudit.errors import ConfigError, DataError
from recaudit.experiment import (DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec, canonical_json,
                                 execute, prepare, read_dataset, spec_id)
from recaudit.seeds import derive_seed


def test_canonical_json_and_ids_are_plain_sorted_and_type_blind():
    spec = {"b": (1, 2), "a": {"y": np.int64(3), "x": np.float64(0.5)}}
    assert canonical_json(spec) == '{"a":{"x":0.5,"y":3},"b":[1,2]}'
    by_hand = hashlib.sha256(('{"a":{"x":0.5,"y":3},"b":[1,2]}' + "fp").encode()).hexdigest()
    assert spec_id(spec, "fp") == by_hand[:20]
    assert spec_id({"a": 1}, "fp") != spec_id({"a": 1}, "other") != spec_id({"a": 2}, "other")
    assert canonical_json(ModelSpec("gru4rec", {"epochs": 2})) == \
        '{"name":"gru4rec","params":{"epochs":2}}'


@pytest.mark.parametrize("make,key,needle", [
    (lambda: DatasetSpec(min_user_interactions=-1), "min_user_interactions", ">= 0"),
    (lambda: SplitSpec(method="random"), "method", "one of"),
    (lambda: SplitSpec(ratio=1.5), "ratio", "(0, 1)"),
    (lambda: ModelSpec("gru4rc"), "name", "Did you mean 'gru4rec'"),
    (lambda: ModelSpec("gru4rec", {"epoch": 2}), "params.epoch", "Did you mean 'epochs'"),
    (lambda: ModelSpec("gru4rec", {"epochs": "two"}), "params.epochs", "expected an integer"),
    (lambda: ExecutorSpec(kind="proces"), "kind", "Did you mean 'process'"),
    (lambda: ExecutorSpec(workers=0), "workers", ">= 1"),
])
def test_specs_validate_at_construction_and_name_the_key(make, key, needle):
    with pytest.raises(ConfigError) as err:
        make()
    assert err.value.key == key and needle in str(err.value)


def test_specs_round_trip_and_take_a_name_for_a_table():
    for spec in (DatasetSpec("synthetic", options={"n_users": 5}, k_core=2), SplitSpec(ratio=0.8),
                 ModelSpec("sasrec", {"epochs": 3}), ExecutorSpec("process", 2, devices=("cpu",))):
        assert type(spec).from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    assert ModelSpec.from_dict("lstm") == ModelSpec("lstm")
    assert DatasetSpec.from_dict("ml-100k").name == "ml-100k"


def test_prepare_refuses_data_a_next_item_model_cannot_learn(tmp_path):
    path = tmp_path / "once.csv"
    path.write_text("user,item,timestamp\n" + "".join(f"u{i},i{i},{i}\n" for i in range(30)))
    spec = DatasetSpec("once", path=str(path), min_user_interactions=0)
    assert len(read_dataset(spec)) == 30
    with pytest.raises(DataError, match="no user with two training interactions"):
        prepare(spec, SplitSpec("leave-last-out"))
    with pytest.raises(DataError, match="no interaction is left"):
        read_dataset(DatasetSpec("once", path=str(path), min_user_interactions=2))


def _plus(a, b):
    return a + b


@pytest.mark.parametrize("kind", ["inprocess", "process"])
def test_executors_give_the_same_results_and_release_groups_after_their_first(kind):
    jobs = [(s, f"k{s % 3}") for s in range(7)]
    spec = ExecutorSpec(kind, workers=2)
    got = sorted(execute(derive_seed, jobs, spec, group=lambda job: job[1]))
    assert got == sorted(derive_seed(*j) for j in jobs)
    order = list(execute(_plus, [(1, 2), (3, 4), (5, 6)], ExecutorSpec(), group=lambda j: "one"))
    assert order == [3, 7, 11]  # in-process: job order


def test_group_members_wait_for_their_first_job():
    """The scheduler submits one job per group, and a group's other jobs only once its first
    has finished (the audit's baselines are then cached, never trained twice)."""
    from recaudit.experiment._executors import _scheduled

    events = []

    def submit(job):
        events.append(("submit", job))
        return job

    def wait_any(pending):
        job = min(pending)  # finish one job at a time, in a fixed order
        events.append(("done", job))
        return {job}

    jobs = [(0, "a"), (1, "b"), (2, "a"), (3, "b"), (4, "a")]
    out = list(_scheduled(jobs, lambda j: j[1], submit, wait_any, lambda j: j[0]))
    assert sorted(out) == [0, 1, 2, 3, 4]
    assert events[:2] == [("submit", (0, "a")), ("submit", (1, "b"))]
    for job in jobs[2:]:
        first = (0, "a") if job[1] == "a" else (1, "b")
        assert events.index(("done", first)) < events.index(("submit", job))


def _fake_pool():
    """A scheduler's pool that logs what it is asked: ``(events, submit, prime, wait_any,
    result)``; one handle finishes at a time, primings first ("(" < "p"), then jobs in
    order; primings give no result."""
    events = []

    def submit(job):
        events.append(("submit", job))
        return job

    def prime(job):
        events.append(("prime", job))
        return ("primed", job)

    def wait_any(pending):
        handle = min(pending, key=repr)
        events.append(("done", handle))
        return {handle}

    def result(handle):
        return None if handle[0] == "primed" else handle[0]

    return events, submit, prime, wait_any, result


def test_a_primed_group_starts_whole_once_its_prime_has_finished():
    """With ``prime``, a group of several jobs waits for its priming and then starts all its
    jobs at once (not only the first); a group of one job runs at once and is not primed;
    primings are not results."""
    from recaudit.experiment._executors import _scheduled

    events, submit, prime, wait_any, result = _fake_pool()
    jobs = [(0, "a"), (1, "b"), (2, "a"), (3, "a")]
    out = list(_scheduled(jobs, lambda j: j[1], submit, wait_any, result, prime))
    assert sorted(out) == [0, 1, 2, 3]                      # the priming is no result
    assert events[:2] == [("prime", (0, "a")), ("submit", (1, "b"))]
    assert ("prime", (1, "b")) not in events                 # a group of one is not primed
    primed = events.index(("done", ("primed", (0, "a"))))
    group_a = [events.index(("submit", j)) for j in jobs if j[1] == "a"]
    assert min(group_a) > primed                             # nothing of "a" before its prime
    assert group_a == list(range(primed + 1, primed + 4))    # then all of "a" at once


def test_a_group_of_early_jobs_starts_with_its_priming():
    """With ``early``, a group whose every job is early starts whole with its priming (a
    group of one job too, which is then primed); a group with one job that is not early
    waits for its priming as before."""
    from recaudit.experiment._executors import _scheduled

    events, submit, prime, wait_any, result = _fake_pool()
    jobs = [(0, "a"), (1, "b"), (2, "a"), (3, "c"), (4, "c")]
    early = {0: True, 1: True, 2: True, 3: True, 4: False}
    out = list(_scheduled(jobs, lambda j: j[1], submit, wait_any, result, prime,
                          lambda j: early[j[0]]))
    assert sorted(out) == [0, 1, 2, 3, 4]
    # "a" (two early jobs) and "b" (one) start with their primings; "c" is primed first
    assert events[:6] == [("prime", (0, "a")), ("submit", (0, "a")), ("submit", (2, "a")),
                          ("prime", (1, "b")), ("submit", (1, "b")), ("prime", (3, "c"))]
    primed_c = events.index(("done", ("primed", (3, "c"))))
    assert events.index(("submit", (3, "c"))) > primed_c
    assert events.index(("submit", (4, "c"))) > primed_c


def _mark(folder, key, _value):
    import pathlib

    pathlib.Path(folder, key).write_text("made")


def _read_mark(folder, key, value):
    import pathlib

    path = pathlib.Path(folder, key)
    return value, path.read_text() if path.exists() else "missing"


def test_a_process_pool_runs_a_groups_prime_before_its_jobs(tmp_path):
    jobs = [(str(tmp_path), "a", 0), (str(tmp_path), "a", 1), (str(tmp_path), "a", 2),
            (str(tmp_path), "b", 3)]
    got = sorted(execute(_read_mark, jobs, ExecutorSpec("process", workers=2),
                         group=lambda job: job[1], prime=_mark))
    # group "a" (three jobs) read what its prime made; "b", alone, was not primed
    assert got == [(0, "made"), (1, "made"), (2, "made"), (3, "missing")]


def test_oversubscribed_executors_warn_but_stay_valid():
    import os

    from recaudit.errors import RecauditWarning

    cpus = os.cpu_count() or 1
    with pytest.warns(RecauditWarning, match="exceed this machine"):
        spec = ExecutorSpec("process", workers=cpus + 1)
    assert spec.workers == cpus + 1
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ExecutorSpec("inprocess", threads_per_worker=cpus + 1)  # the caller's own process
        ExecutorSpec("ray", workers=cpus + 1, address="ray://cluster:10001")  # not this host



def test_a_files_memoised_log_follows_the_file_and_the_working_folder(tmp_path, monkeypatch):
    """The same relative path in another folder, or the file written again, is read afresh
    (before, the first folder's log came back from the per-process memo)."""
    rows = {"a": "u1,i1,1\nu1,i2,2\nu1,i3,3\nu2,i1,1\nu2,i2,2\n",
            "b": "u1,i1,1\nu1,i2,2\nu1,i3,3\nu1,i4,4\nu2,i4,1\nu2,i1,2\nu2,i3,3\n"}
    spec = DatasetSpec("plays", path="plays.csv", min_user_interactions=0)
    split = SplitSpec("leave-last-out")
    seen = []
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "plays.csv").write_text(rows[folder])
        monkeypatch.chdir(tmp_path / folder)
        seen.append(len(prepare(spec, split)[0]))
    assert seen == [5, 7]
    (tmp_path / "b" / "plays.csv").write_text(rows["a"])
    assert len(prepare(spec, split)[0]) == 5
    assert prepare(spec, split)[0] is prepare(spec, split)[0]  # unchanged: memoised
