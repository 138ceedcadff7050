"""What keeping a fit's state costs (``recaudit._resume.resumable``), against an epoch.

A fit inside ``resumable`` keeps its state at an epoch's end at most once a minute (and at most
once every 20 times the seconds the last keeping took). This benchmark trains one epoch of
each paper-scale model on its paper's data on the CPU, keeps the state after it, and resumes
from it: it prints the epoch's seconds (the anchor, measured in the same run), the keeping's
and the resumption's seconds, their ratio to the epoch, the file's size, and the share of a
fit's wall time that keeping once a minute costs (``keep / 60 s``).

    python benchmarks/bench_resume.py                      # GRU4Rec (Betello et al. 2023),
                                                           # LSTM, TiSASRec (Oh et al. 2022)
    python benchmarks/bench_resume.py --models lstm@oh2022,tisasrec@oh2022,jodie@oh2022,latentcross@oh2022
    python benchmarks/bench_resume.py --models sasrec@betello2023 --threads 2

Measured 2026-11-29 on the shared 2-core machine, two reproduction trainings running beside it
(one thread each; the epochs are therefore 2-3x their quiet times, the keeping less so):

    model                   epoch s  keep s keep/epoch resume s     MB keep/60 s
    gru4rec@betello2023       66.95   0.006     0.0001    0.003    2.9     0.01%
    lstm@oh2022              106.43   0.072     0.0007    0.004    7.5     0.12%
    tisasrec@oh2022           62.75   0.027     0.0004    0.010   12.3     0.05%
    jodie@oh2022             179.20   2.588     0.0144    0.733  526.0     4.31%
    latentcross@oh2022        29.83   0.140     0.0047    0.023   17.9     0.23%

JODIE's state is its parameters and Adam's two moments over Foursquare's catalogue; its 2.6 s
keeping is what the 20x rule spaces out (a keeping every 52 s or more: at most 5 %).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

DATA = {  # model preset -> (dataset, its filter, split) as the reproductions use them
    "betello2023": ("ml-100k", {"min_user_interactions": 10}, ("leave-last-out",)),
    "oh2022": ("foursquare", {"min_user_interactions": 10}, ("temporal-ratio", 0.9, "test")),
}


def _split(preset: str):
    from recaudit.experiment import DatasetSpec, SplitSpec, prepare

    name, options, split = DATA[preset]
    spec = SplitSpec(*split[:2], **({"floor": split[2]} if len(split) > 2 else {}))
    _, sp = prepare(DatasetSpec(name, **options), spec)
    return sp


def measure(model_name: str, threads: int) -> dict[str, float]:
    from recaudit._resume import resumable
    from recaudit.models import create
    from recaudit.models.sequential import _resume

    train = _split(model_name.split("@")[1]).train
    seconds: dict[str, float] = {}
    keep, restore, finish = _resume.Keeper.keep, _resume.Keeper.restore, _resume.Keeper.finish

    def timed(name, fn):
        def wrapper(self, *args):
            t0 = time.perf_counter()
            out = fn(self, *args)
            seconds[name] = time.perf_counter() - t0
            return out
        return wrapper

    def kept(self):                      # the first fit leaves its state for the second
        seconds["bytes"] = self.path.stat().st_size
    with tempfile.TemporaryDirectory() as tmp:
        _resume.Keeper.keep = timed("keep", keep)
        _resume.Keeper.restore = timed("restore", restore)
        _resume.Keeper.finish = kept
        try:
            with resumable(Path(tmp), every=0):
                model = create(model_name, epochs=1, num_threads=threads, device="cpu")
                model.fit(train, seed=0)
                seconds["epoch"] = model.history_[0]["seconds"]
                _resume.Keeper.finish = finish
                again = create(model_name, epochs=1, num_threads=threads, device="cpu")
                again.fit(train, seed=0)          # resumes after epoch 1: trains nothing
        finally:
            _resume.Keeper.keep, _resume.Keeper.restore = keep, restore
            _resume.Keeper.finish = finish
        assert again.history_ == model.history_
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default="gru4rec@betello2023,lstm@oh2022,tisasrec@oh2022")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(f"{'model':<22} {'epoch s':>8} {'keep s':>7} {'keep/epoch':>10} {'resume s':>8} "
          f"{'MB':>6} {'keep/60 s':>9}")
    for name in args.models.split(","):
        s = measure(name, args.threads)
        print(f"{name:<22} {s['epoch']:>8.2f} {s['keep']:>7.3f} {s['keep'] / s['epoch']:>10.4f} "
              f"{s['restore']:>8.3f} {s['bytes'] / 2**20:>6.1f} {s['keep'] / 60:>9.2%}",
              flush=True)


if __name__ == "__main__":
    main()
