"""Executor devices: validation, round-robin dealing to workers, and what models resolve."""

import multiprocessing as mp

import pytest
import torch

from recaudit.audit import ExecutorSpec
from recaudit.errors import ConfigError
from recaudit.models import resolve_device, set_process_device
from tests.audit._device_probe import report_device


@pytest.mark.parametrize("kw,match", [
    (dict(kind="process", devices=["gpu0"]), "device must be"),
    (dict(kind="process", devices="cuda:0"), "list of device names"),
    (dict(kind="ray", devices=["cuda:0"]), "Ray places"),
    (dict(kind="inprocess", devices=["cpu", "cpu"]), "one device"),
])
def test_bad_devices_are_config_errors(kw, match):
    with pytest.raises(ConfigError, match=match):
        ExecutorSpec(**kw)


def test_devices_are_dealt_to_workers_round_robin():
    ctx = mp.get_context("spawn")
    counter, queue = ctx.Value("i", 0), ctx.Queue()
    got = []
    for _ in range(3):  # one worker after the other: the k-th gets devices[k % 2]
        p = ctx.Process(target=report_device, args=(("cpu", "auto"), counter, queue))
        p.start()
        got.append(queue.get(timeout=120))
        p.join()
    assert got == ["cpu", "auto", "cpu"]


def test_models_resolve_to_the_process_device():
    try:
        set_process_device("cpu")
        assert resolve_device("auto") == torch.device("cpu")
        set_process_device(None)
        assert resolve_device("cpu") == torch.device("cpu")
        if not torch.cuda.is_available():
            set_process_device("cuda:3")
            assert resolve_device("cpu") == torch.device("cpu")  # explicit CPU stays
            with pytest.raises(ConfigError, match="cuda:3"):
                resolve_device("auto")
    finally:
        set_process_device(None)
