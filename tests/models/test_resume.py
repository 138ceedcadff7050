"""A killed fit resumes from its last kept epoch and ends bit for bit as if never stopped.

Every configuration of the stacking tests (every sequential model, recurrences, early
stopping, TracIn checkpoints, BERT4Rec's drawn Cloze masks, JODIE's dynamic state) trains a
stack of three members that is stopped after its second epoch (an exception from the progress
report, as a kill would leave it: the state kept, the fit unfinished) and trained again in the
same folder: its members' scores, loss and validation histories, checkpoints and TracIn
factors must equal those of a stack that was never stopped.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from recaudit import _progress
from recaudit.errors import RecauditWarning
from recaudit.models.sequential import fit_stack, resumable
from tests.models.test_stack import CONFIGS, _assert_same, _logs, _model, _state


class Stop(Exception):
    """What stops a fit here (a kill stops it between two epochs just as well)."""


def _stop_at(epoch: int):
    def watcher(fields):
        if fields.get("epoch") == epoch:
            raise Stop
    return watcher


def _fit(key, logs, seeds, folder=None, every=0.0, stop=None, seen=None, keep=False):
    models = [_model(key) for _ in logs]
    def watch(fields):        # the epochs trained ("resumed" for the resumption's report)
        if seen is not None and "epoch" in fields:
            seen.append("resumed" if "resumed_at" in fields else fields["epoch"])
    watcher = _stop_at(stop) if stop else watch
    with resumable(folder, every=every, keep_finished=keep), _progress.reporting(watcher):
        fit_stack(models, logs, seeds)
    return models


def _assert_members_same(key, expected, got, logs, queries, what=""):
    """Each member of ``got`` ends as the same member of ``expected``: epochs, scores,
    losses, validation, checkpoints, TracIn factors (and JODIE's dynamic state)."""
    for i, (a, b) in enumerate(zip(expected, got, strict=True)):
        assert [r["epoch"] for r in a.history_] == [r["epoch"] for r in b.history_]
        _assert_same(_state(a, logs[i], queries), _state(b, logs[i], queries),
                     f"{key} member {i} {what}".rstrip())
        if key == "jodie":
            assert np.array_equal(a.user_state_.numpy(), b.user_state_.numpy())


@pytest.mark.parametrize("key", sorted(CONFIGS))
def test_a_stopped_stack_resumes_bit_for_bit(key, tmp_path):
    logs, queries = _logs()
    seeds = [0, 1, 2]
    whole = _fit(key, logs, seeds)
    with pytest.raises(Stop):
        _fit(key, logs, seeds, tmp_path, stop=2)
    assert len(list(tmp_path.glob("*.pt"))) == 1      # the state after epoch 2 is kept
    seen: list[int] = []
    resumed = _fit(key, logs, seeds, tmp_path, seen=seen)
    epochs = whole[0].config.epochs
    # it went on from epoch 3 (members that stopped early did not train again)
    assert seen == ["resumed", *range(3, epochs + 1)]
    assert list(tmp_path.iterdir()) == []             # a finished fit removes its state
    # the resumed fit's time before this process: at least its kept epochs' own seconds
    before = max(sum(r["seconds"] for r in m.history_ if r["epoch"] <= 2) for m in resumed)
    assert all(m.resumed_seconds_ == resumed[0].resumed_seconds_ >= before > 0
               for m in resumed)
    assert all(m.resumed_seconds_ == 0.0 for m in whole)
    _assert_members_same(key, whole, resumed, logs, queries)


@pytest.mark.parametrize("key", ["jodie", "lstm", "latentcross-history"])
def test_a_stack_stopped_after_its_last_epoch_finishes_from_its_state(key, tmp_path):
    """Killed between the last epoch and the hand-over: nothing is trained again, and what
    the last epoch left for the model (JODIE's dynamic embeddings) comes from the state."""
    logs, queries = _logs()
    whole = _fit(key, logs, [0, 1, 2])
    with pytest.raises(Stop):
        _fit(key, logs, [0, 1, 2], tmp_path, stop=whole[0].config.epochs)
    seen: list[int] = []
    resumed = _fit(key, logs, [0, 1, 2], tmp_path, seen=seen)
    assert seen == ["resumed"]
    _assert_members_same(key, whole, resumed, logs, queries)


def test_only_the_same_fit_reads_a_kept_state(tmp_path):
    logs, queries = _logs()
    with pytest.raises(Stop):
        _fit("gru4rec", logs[:1], [0], tmp_path, stop=2)
    kept = sorted(tmp_path.glob("*.pt"))
    # another seed, another log, another configuration: each starts from its first epoch
    for key, log, seed in (("gru4rec", logs[0], 1), ("gru4rec", logs[1], 0),
                           ("gru4rec-batched", logs[0], 0)):
        seen: list[int] = []
        _fit(key, [log], [seed], tmp_path, seen=seen)
        assert seen[0] == 1, (key, seed)
    assert sorted(tmp_path.glob("*.pt")) == kept      # and the stopped one's state is left


def test_state_is_kept_once_its_interval_has_passed(tmp_path):
    logs, _ = _logs()
    with pytest.raises(Stop):       # an hour between keepings: nothing is kept in 2 epochs
        _fit("sasrec", logs[:1], [0], tmp_path, every=3600.0, stop=2)
    assert list(tmp_path.iterdir()) == []
    seen: list[int] = []
    _fit("sasrec", logs[:1], [0], tmp_path, every=3600.0, seen=seen)
    assert seen[0] == 1


def test_an_unreadable_state_is_set_aside_and_the_fit_starts_over(tmp_path):
    logs, queries = _logs()
    whole = _fit("lstm", logs[:1], [4])
    with pytest.raises(Stop):
        _fit("lstm", logs[:1], [4], tmp_path, stop=2)
    (path,) = tmp_path.glob("*.pt")
    path.write_bytes(path.read_bytes()[:100])          # cut short (a copy gone wrong)
    seen: list[int] = []
    with pytest.warns(RecauditWarning, match="cannot be read.*starts from its first epoch"):
        again = _fit("lstm", logs[:1], [4], tmp_path, seen=seen)
    assert seen[0] == 1
    assert [p.name for p in tmp_path.iterdir()] == [path.name + ".unreadable"]
    assert np.array_equal(whole[0].score(queries), again[0].score(queries))


def test_a_folder_that_cannot_be_written_stops_the_keeping_not_the_fit(tmp_path):
    logs, queries = _logs()
    whole = _fit("gru4rec", logs[:1], [2])
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    seen: list[int] = []
    fitted = _fit("gru4rec", logs[:1], [2], blocked / "fits", seen=seen)
    assert seen == [1, 2, 3]
    assert np.array_equal(whole[0].score(queries), fitted[0].score(queries))


def test_every_must_not_be_negative(tmp_path):
    with pytest.raises(ValueError, match="every must be >= 0"):
        with resumable(tmp_path, every=-1):
            pass


def test_a_stack_that_ran_out_of_memory_leaves_no_state_once_its_halves_are_trained(
        tmp_path, monkeypatch):
    """Simulated: stacks of more than one run out of GPU memory after their epoch 2, whose
    state was kept. The halves (1 and 2, then 1 and 1) train; then the states kept by the
    stacks that split are removed: nothing would ever resume them."""
    import torch

    from recaudit.models.sequential import _train

    logs, queries = _logs()
    alone = [_model("lstm").fit(t, seed=3).score(queries) for t in logs]
    real = _train.train

    def out_of_memory_at_epoch_2(courses):
        if len(courses) == 1:
            return real(courses)
        def watcher(fields):
            if fields.get("epoch") == 2:
                assert len(list(tmp_path.glob("*.pt"))) >= 1   # kept before it failed
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")
        with _progress.reporting(watcher):
            return real(courses)

    monkeypatch.setattr(_train, "train", out_of_memory_at_epoch_2)
    with pytest.warns(RecauditWarning, match="ran out of memory"):
        members = _fit("lstm", logs, [3, 3, 3], tmp_path)
    assert list(tmp_path.iterdir()) == []
    for a, m in zip(alone, members, strict=True):
        assert np.array_equal(a, m.score(queries))


# sasrec-prefix-patience: members stop early (after 2, 2 and 4 epochs); jodie: the last
# epoch's dynamic state; bert4rec: the drawn Cloze masks' generator; lstm: TracIn checkpoints
@pytest.mark.parametrize("key", ["sasrec-prefix-patience", "jodie", "bert4rec", "lstm"])
def test_a_finished_fit_kept_is_taken_by_the_same_fit_without_training(key, tmp_path):
    logs, queries = _logs()
    seeds = [0, 1, 2]
    whole = _fit(key, logs, seeds)
    first = _fit(key, logs, seeds, tmp_path, every=3600.0, keep=True)  # (no keeping between)
    (about,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    trained = max(len(m.history_) for m in first)
    assert about["finished"] is True and about["epoch"] == trained and about["seeds"] == seeds
    seen: list = []
    again = _fit(key, logs, seeds, tmp_path, seen=seen, keep=True)
    assert seen == ["resumed"]                        # it trained no epoch
    assert len(list(tmp_path.glob("*.pt"))) == 1      # and the state stays for the next
    # what it took: the first fit's seconds (rounded in the .json, exact in the state)
    assert all(m.resumed_seconds_ == pytest.approx(about["seconds"], abs=0.06) for m in again)
    _assert_members_same(key, whole, first, logs, queries, "kept")
    _assert_members_same(key, whole, again, logs, queries, "taken")


def test_only_the_same_fit_takes_a_finished_one_and_without_keeping_it_is_used_up(tmp_path):
    logs, _ = _logs()
    _fit("gru4rec", logs[:1], [0], tmp_path, keep=True)
    kept = sorted(tmp_path.iterdir())
    # another seed, another log, another stack: each trains all its epochs (and keeps its own)
    for log, seeds in (([logs[0]], [1]), ([logs[1]], [0]), (logs[:2], [0, 0])):
        seen: list = []
        _fit("gru4rec", log, seeds, tmp_path, seen=seen, keep=True)
        assert seen[0] == 1, seeds
    assert len(list(tmp_path.glob("*.pt"))) == 4 and set(kept) <= set(tmp_path.iterdir())
    # taken by a fit that does not keep finished fits: used, then removed like its own
    seen = []
    _fit("gru4rec", logs[:1], [0], tmp_path, seen=seen)
    assert seen == ["resumed"]
    assert not set(kept) & set(tmp_path.iterdir())


def test_a_stopped_fit_resumed_with_keeping_ends_as_a_finished_one(tmp_path):
    """Stopped before its end, then resumed in a folder that keeps finished fits: the state
    it resumed from becomes the finished state, which the next fit takes."""
    logs, queries = _logs()
    whole = _fit("gru4rec", logs[:1], [0])
    with pytest.raises(Stop):
        _fit("gru4rec", logs[:1], [0], tmp_path, stop=2, keep=True)
    (about,) = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert about["epoch"] == 2 and "finished" not in about
    seen: list = []
    _fit("gru4rec", logs[:1], [0], tmp_path, seen=seen, keep=True)
    assert seen[0] == "resumed" and seen[1:] == list(range(3, whole[0].config.epochs + 1))
    seen = []
    taken = _fit("gru4rec", logs[:1], [0], tmp_path, seen=seen, keep=True)
    assert seen == ["resumed"]
    _assert_same(_state(whole[0], logs[0], queries), _state(taken[0], logs[0], queries),
                 "gru4rec")


def test_the_models_keep_the_key_their_states_had_before_they_moved():
    """Issue 61 moved SASRec, TiSASRec, BERT4Rec, LatentCross and JODIE into a package per
    family. The key of a kept state names the model's class (a state never reaches another
    class's fit), by the path its states were first kept under, so a fit stopped before the
    move resumes after it; a class of its own is named by its own path."""
    from recaudit.models import create, model_class
    from recaudit.models.sequential import JODIE
    from recaudit.models.sequential._resume import class_path

    before = {"sasrec": "_sasrec.SASRec", "tisasrec": "_tisasrec.TiSASRec",
              "bert4rec": "_bert4rec.BERT4Rec", "latentcross": "_latentcross.LatentCross",
              "jodie": "_jodie.JODIE", "gru4rec": "_gru4rec.GRU4Rec", "lstm": "_lstm.LSTM"}
    for name, path in before.items():
        module = path.rpartition(".")[0]
        moved = model_class(name).__module__ != f"recaudit.models.sequential.{module}"
        assert moved == (name not in ("gru4rec", "lstm")), name
        assert class_path(create(name)) == f"recaudit.models.sequential.{path}", name

    class Mine(JODIE):
        pass

    assert class_path(Mine()) == f"{__name__}.{Mine.__qualname__}"
