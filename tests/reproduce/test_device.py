"""``recaudit reproduce run --device cuda:0``: the audits' neural models train on one device,
every worker on it, without changing a trial's id (a store filled on a GPU is read anywhere)."""

import platform

import pytest
import torch

from recaudit.audit import AuditConfig, ModelSpec, plan as plan_trials
from recaudit.cli import main
from recaudit.errors import ConfigError
from recaudit.reproduce import Scope, plan
from recaudit.reproduce._audit import audit_trials, on_device, trained_on

CUDA = torch.cuda.is_available()


def _ids(config):
    return [tid for _, tid, _ in plan_trials(config)]


def test_a_models_device_is_not_part_of_a_trial_id(tmp_path):
    base = AuditConfig(models=(ModelSpec("lstm", {"epochs": 2}),), output=str(tmp_path / "a"))
    on_gpu = AuditConfig(models=(ModelSpec("lstm", {"epochs": 2, "device": "auto"}),),
                         output=str(tmp_path / "a"))
    other = AuditConfig(models=(ModelSpec("lstm", {"epochs": 3}),), output=str(tmp_path / "a"))
    assert _ids(base) == _ids(on_gpu)
    assert _ids(base) != _ids(other)        # every other parameter still is


def test_plan_on_a_device_places_the_models_and_keeps_the_ids(tmp_path, shared_data):
    scope = Scope(seeds=1, draws=1, models=("latentcross", "lstm"))
    cpu = plan("oh2022-table3", "paper", tmp_path, workers=2, scope=scope)
    gpu = plan("oh2022-table3", "paper", tmp_path, workers=2,
               scope=Scope(seeds=1, draws=1, models=("latentcross", "lstm"), device="cuda:0"))
    assert len(cpu) == len(gpu) > 0
    for c, g in zip(cpu, gpu, strict=True):
        assert all("device" not in m.params for m in c.models)
        assert all(m.params["device"] == "auto" for m in g.models)
        assert g.executor.kind == "process" and g.executor.workers == 2
        assert g.executor.devices == ("cuda:0",)
        assert _ids(c) == _ids(g)
    assert list(tmp_path.iterdir()) == []


def test_the_cpu_device_changes_nothing(tmp_path):
    scope = Scope(seeds=1, draws=1, models=("jodie",))
    cpu = plan("oh2022-table4", "paper", tmp_path, scope=scope)
    same = plan("oh2022-table4", "paper", tmp_path,
                scope=Scope(seeds=1, draws=1, models=("jodie",), device="cpu"))
    assert cpu == same


def test_placed_training_gives_the_same_trials(tmp_path, shared_data):
    """Through the device path ('auto': the CPU on this machine) the same trials are stored
    under the same ids with bit-identical results."""
    from recaudit.audit import DatasetSpec, SplitSpec

    def config(out):
        return AuditConfig(datasets=(DatasetSpec("synthetic", options={"n_users": 80}),),
                           models=(ModelSpec("lstm", {"epochs": 1, "embedding_dim": 8}),),
                           perturbations=("random-delete",), split=SplitSpec(),
                           output=str(tmp_path / out))

    plain = audit_trials(config("plain.duckdb"))
    with on_device("auto"), trained_on() as devices:
        placed = audit_trials(config("placed.duckdb"))
    assert list(plain["trial_id"]) == list(placed["trial_id"])
    assert list(plain["rbo"]) == list(placed["rbo"])
    assert devices == {"lstm": [f"cpu ({platform.machine()})"]}   # as the store recorded it


def test_the_page_says_where_the_trials_trained():
    from recaudit.reproduce._report import _trained_on

    gpu = {"trained_on": {"latentcross": ["cpu (x86_64)"], "lstm": ["cuda:0 (NVIDIA H200)"]}}
    assert _trained_on(gpu) == ("; trials trained on cpu (x86_64) (latentcross), "
                                "cuda:0 (NVIDIA H200) (lstm)")
    assert _trained_on({"trained_on": {"jodie": ["cpu (x86_64)"]}}) == ""   # the machine's own
    assert _trained_on({}) == ""                                            # older records


def test_scope_device_is_checked_and_shown():
    assert Scope(seeds=1, device="cuda:0").flags() == " --seeds 1 --device cuda:0"
    assert not Scope(device="cuda:0").reduced
    with pytest.raises(ConfigError, match="device") as e:
        Scope(device="gpu0")
    assert e.value.key == "device"


def test_experiments_that_are_not_audits_refuse_a_device(tmp_path):
    from recaudit.reproduce._recording import run

    with pytest.raises(ConfigError, match="--device"):
        run("zhu2023-figure7", "small", tmp_path, scope=Scope(device="auto"))


@pytest.mark.skipif(CUDA, reason="a CUDA device is present")
def test_training_on_cuda_without_one_is_a_clear_error(tmp_path, capsys):
    code = main(["reproduce", "run", "oh2022-table4", "--scale", "small", "--device", "cuda:0",
                 "--dir", str(tmp_path)])
    assert code != 0
    err = capsys.readouterr().err
    assert "no CUDA device is available" in err and "--no-train" in err
    assert list(tmp_path.iterdir()) == []


def test_an_interrupted_reproduction_says_what_its_stores_hold(tmp_path, monkeypatch, capsys):
    """Ctrl-C in `reproduce run`: the finished trials of the stores under --dir, not
    'nothing was saved' (what a paper-scale run on a GPU said while it had saved eight)."""
    import recaudit.reproduce
    from recaudit.audit import AuditStore

    with AuditStore(tmp_path / "oh2022-foursquare-paper.duckdb") as st:
        for tid in ("t0", "t1"):
            st.insert("trials", {"trial_id": [tid], "status": ["done"]})
    with AuditStore(tmp_path / "oh2022-wikipedia-paper.duckdb") as st:
        st.insert("trials", {"trial_id": ["t2"], "status": ["done"]})

    def interrupted(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(recaudit.reproduce, "run", interrupted)
    code = main(["reproduce", "run", "oh2022-table4", "--scale", "paper", "--dir",
                 str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 130
    assert f"3 finished trials saved in the stores under {tmp_path}" in err
    assert "run the same command again to resume" in err


@pytest.mark.parametrize("device", [None, "cuda:0"])
def test_betello_runs_keep_their_fits_with_any_workers_and_device(tmp_path, device):
    """betello2023-removal and its +inputs twin share their perturbed fits through the
    store's kept fits (``keep_fits``): the executor that --workers and --device make keeps
    the setting, and the trials' ids do not change with it."""
    from dataclasses import replace

    from recaudit.audit import ExecutorSpec

    for name in ("betello2023-table2", "betello2023-removal", "betello2023-removal-inputs"):
        one = plan(name, "paper", tmp_path, scope=Scope(models=("gru4rec",)))
        two = plan(name, "paper", tmp_path, workers=2,
                   scope=Scope(models=("gru4rec",), device=device))
        for a, b in zip(one, two, strict=True):
            assert a.executor.keep_fits and b.executor.keep_fits, name
            assert b.executor.kind == "process" and b.executor.workers == 2
            assert _ids(a) == _ids(replace(a, executor=ExecutorSpec())) == _ids(b)
    assert list(tmp_path.iterdir()) == []
