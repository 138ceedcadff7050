"""reproduce queue: items run in priority order until the time is up, the running one is
stopped as Ctrl-C stops a run (its finished trials kept), queue.json says what each holds."""

from __future__ import annotations

import json
import time

import pytest

from recaudit.reproduce import Scope
from recaudit.reproduce._queue import QUEUE, QueueItem, run_queue


def _items():
    return (QueueItem("first", "paper", Scope(seeds=3, models=("lstm",)), "a"),
            QueueItem("second", "paper", Scope(draws=10), "b"),
            QueueItem("third", "paper", Scope(), "c"))


def test_the_queue_stops_when_the_time_is_up(tmp_path):
    ran = []

    def runner(name, scale, root, *, workers, scope, records):
        ran.append((name, scope.device, scope.stack))
        if name == "second":   # a fit of its store keeps its state, then the time is up
            kept = root / "second.duckdb.fits.d"
            kept.mkdir()
            (kept / "k.pt").write_bytes(b"state")
            (kept / "k.json").write_text(json.dumps({"model": "lstm", "seeds": [1, 2],
                                                     "epoch": 7, "epochs": 50, "kept": 1.0}))
            (root / "second.duckdb").write_text("")
            time.sleep(300)  # interrupted by the timer (2 s in) long before
            raise AssertionError("the timer did not stop the run")
        (root / f"{name}.duckdb").write_text("")
        return {"verdict": "undecided"}

    t0 = time.monotonic()
    out = run_queue(tmp_path, minutes=1.0, margin=58.0, items=_items(), runner=runner,
                    device="cuda:0", stack=16)
    # stopped at the deadline, not after the 300-s sleep (a bound a loaded machine keeps)
    assert time.monotonic() - t0 < 150
    assert ran == [("first", "cuda:0", 16), ("second", "cuda:0", 16)]
    states = [i["state"] for i in out["items"]]
    assert states[0] == "complete" and states[1].startswith("stopped")
    assert states[2] == "not started (time up)"
    on_disk = json.loads((tmp_path / "queue.json").read_text())
    assert on_disk["merge"] == [f"recaudit merge results/reproduce/{n}.duckdb "
                                f"{tmp_path / n}.duckdb" for n in ("first", "second")]
    assert on_disk["kept"] == [{"store": str(tmp_path / "second.duckdb"), "model": "lstm",
                                "seeds": [1, 2], "epoch": 7, "epochs": 50, "kept": 1.0}]
    assert on_disk["record"][0] == ("recaudit reproduce run first --scale paper --seeds 3 "
                                    "--models lstm --no-train")


def test_the_queue_is_in_the_issues_priority_order():
    assert [(i.experiment, i.scope.models) for i in QUEUE[:2]] == [
        ("oh2022-table3", ("lstm", "tisasrec")), ("oh2022-table4", None)]
    assert QUEUE[0].scope.seeds == 3 and QUEUE[1].scope.draws == 10
    assert all(i.experiment.startswith("betello2023") for i in QUEUE[2:5])
    assert QUEUE[4].experiment == "betello2023-removal-inputs"   # after the fits it takes
    assert QUEUE[5].experiment == "oh2022-figure3"


def test_minutes_must_be_positive(tmp_path):
    from recaudit.errors import ConfigError

    with pytest.raises(ConfigError, match="positive"):
        run_queue(tmp_path, minutes=0)


def test_reproduce_run_names_the_kept_fits_it_would_resume(tmp_path, monkeypatch, capsys):
    import recaudit.reproduce as reproduce
    from recaudit.cli import main

    kept = tmp_path / "betello2023-ml-100k-paper.duckdb.fits.d"
    kept.mkdir(parents=True)
    (tmp_path / "betello2023-ml-100k-paper.duckdb").write_text("")
    (kept / "k.pt").write_bytes(b"state")
    (kept / "k.json").write_text(json.dumps({"model": "gru4rec", "seeds": [0], "epoch": 58,
                                             "epochs": 300, "kept": 1.0}))
    (kept / "f.pt").write_bytes(b"state")       # a finished fit kept for its +inputs twin
    (kept / "f.json").write_text(json.dumps({"model": "gru4rec", "seeds": [0], "epoch": 180,
                                             "epochs": 300, "kept": 2.0, "finished": True}))
    monkeypatch.setattr(reproduce, "run", lambda *a, **k: {"verdict": "incomplete",
                                                             "wall_seconds": 1.0})
    assert main(["reproduce", "run", "betello2023-table2", "--scale", "paper", "--dir",
                 str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert ("betello2023-ml-100k-paper.duckdb: a gru4rec fit kept after its epoch 58 of 300 "
            "by a stopped run: resumed there if this run trains it") in err, err
    assert ("betello2023-ml-100k-paper.duckdb: a gru4rec fit finished after epoch 180 of 300: "
            "taken by a trial that trains it again") in err, err
