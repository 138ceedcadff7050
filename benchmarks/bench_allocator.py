"""Keeping freed memory (``recaudit._memory``) against glibc's default, on one JODIE epoch.

The anchor is the same fit with the allocator left alone (``RECAUDIT_KEEP_FREED_MEMORY=0``).
Each run is a fresh process with one torch thread that fits ``jodie@oh2022`` (the paper's
settings) for one epoch on the dataset after Oh et al. 2022's filter (users with >= 10
interactions, temporal 90/10 split) and prints the epoch's seconds and the process's minor page
faults; the two runs must give the same user states bit for bit.

    python benchmarks/bench_allocator.py                       # Foursquare, about 2.5 min
    python benchmarks/bench_allocator.py --dataset wikipedia   # smaller tables: less to gain
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = """
import hashlib, json, resource, sys
import torch
from recaudit._memory import keep_freed_memory
kept = keep_freed_memory()
torch.set_num_threads(1)
from recaudit.experiment import DatasetSpec, SplitSpec, prepare
from recaudit.models import create
_, split = prepare(DatasetSpec(sys.argv[1], min_user_interactions=10),
                   SplitSpec("temporal-ratio", 0.9, floor="test"))
model = create("jodie@oh2022", epochs=1).fit(split.train, seed=0)
digest = hashlib.sha256(model.user_state_.numpy().tobytes()).hexdigest()[:16]
print(json.dumps({"kept": kept, "seconds": model.history_[0]["seconds"], "digest": digest,
                  "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt}))
"""


def run(dataset: str, keep: bool) -> dict:
    env = {**os.environ, "RECAUDIT_KEEP_FREED_MEMORY": "1" if keep else "0"}
    res = subprocess.run([sys.executable, "-c", CHILD, dataset], capture_output=True,
                         text=True, env=env, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="foursquare")
    args = ap.parse_args()
    anchor, ours = run(args.dataset, keep=False), run(args.dataset, keep=True)
    if anchor["digest"] != ours["digest"]:
        raise SystemExit("the two fits differ: keeping freed memory must change no number")
    print(f"jodie@oh2022, one epoch on {args.dataset}, 1 thread")
    for name, r in (("glibc default (anchor)", anchor), ("freed memory kept", ours)):
        print(f"  {name:<24} {r['seconds']:7.1f} s/epoch  {r['faults']:>11,} page faults")
    print(f"  ratio anchor / ours: {anchor['seconds'] / ours['seconds']:.2f}x "
          f"(same user states: {ours['digest']})")


if __name__ == "__main__":
    main()
