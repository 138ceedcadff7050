"""TracIn's scores streamed (what the rows share -- a replay of the log, the queries' factors --
computed once per checkpoint) against the chunked protocol (``checkpoint_factors`` per chunk of
rows: all of it once per checkpoint *and* chunk), for the models that replay the whole log:
JODIE and LatentCross over the whole history (``latentcross@oh2022``).

The anchor is what :func:`recaudit.perturb.tracin_scores` did before the stream: the same
factors, asked for chunk by chunk (chunks of ``(64 << 20) // n_items`` rows, its default). Both
must give the same scores (to float32 rounding of the factors). One epoch of training is printed
beside them as a second yardstick.

    python benchmarks/bench_tracin_stream.py                       # JODIE, Wikipedia, ~5 min
    python benchmarks/bench_tracin_stream.py --model latentcross --dataset foursquare
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from recaudit.audit import DatasetSpec, SplitSpec
from recaudit.experiment import prepare
from recaudit.models import create
from recaudit.perturb import tracin_scores


class _Chunked:
    """A model seen through the chunked protocol only (no stream)."""

    def __init__(self, model) -> None:
        self.model = model

    def checkpoint_factors(self, train, rows, queries):
        return self.model.checkpoint_factors(train, rows, queries)

    def checkpoint_gradients(self, train, rows, queries):  # pragma: no cover - protocol only
        return self.model.checkpoint_gradients(train, rows, queries)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="jodie", choices=("jodie", "latentcross"))
    ap.add_argument("--dataset", default="wikipedia")
    ap.add_argument("--users", type=int, default=0, help="users sampled (0: all)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--every", type=int, default=1, help="checkpoint every this many epochs")
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(1)
    _, split = prepare(DatasetSpec(args.dataset, min_user_interactions=10,
                                   sample_users=args.users or None),
                       SplitSpec("temporal-ratio", 0.9, floor="test"))
    train, queries = split.train, split.queries
    model = create(f"{args.model}@oh2022", epochs=args.epochs, checkpoint_every=args.every)
    model.fit(train, seed=0)
    epoch_s = float(np.median([h["seconds"] for h in model.history_]))
    chunk = max(256, (64 << 20) // train.n_items)
    print(f"{args.model}, {args.dataset}: {len(train)} training rows, {train.n_items} items, "
          f"{len(queries)} queries; {len(model.checkpoints_)} checkpoint(s); "
          f"{-(-len(train) // chunk)} chunk(s) of {chunk} rows")
    times: dict[str, list[float]] = {"anchor": [], "ours": []}
    scores: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):  # alternated, best of each (the first call also warms up)
        for name, target in (("anchor", _Chunked(model)), ("ours", model)):
            t0 = time.perf_counter()
            scores[name] = tracin_scores(target, train, queries)
            times[name].append(time.perf_counter() - t0)
    anchor, ours = scores["anchor"], scores["ours"]
    anchor_s, ours_s = min(times["anchor"]), min(times["ours"])
    np.testing.assert_allclose(ours, anchor, rtol=1e-4, atol=1e-6 * np.abs(anchor).max())
    print(f"one training epoch (median)   {epoch_s:8.1f} s")
    print(f"chunked (anchor)              {anchor_s:8.1f} s")
    print(f"streamed (ours)               {ours_s:8.1f} s   {anchor_s / ours_s:.2f}x the anchor; "
          f"{ours_s / epoch_s:.2f} epochs")
    print(f"most influential row: anchor {int(np.argmax(anchor))}, ours {int(np.argmax(ours))}")


if __name__ == "__main__":
    main()
