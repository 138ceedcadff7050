"""A tiny recommender program for the command-model tests (run as a separate process).

    python fake_command_model.py train TRAIN SEED MODEL_DIR PARAMS [MODE]
    python fake_command_model.py rank MODEL_DIR QUERIES K OUTPUT [MODE]

It learns item-to-next-item transition counts plus popularity, and adds seeded noise of scale
``params["noise"]`` (default 0.5) to the item scores, so the seed, the data and the context all
matter. MODE makes it misbehave on purpose (see the tests).
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd


def train(train_path, seed, model_dir, params_path, mode="ok"):
    if mode == "fail":
        print("fake trainer: out of memory (on purpose)", file=sys.stderr)
        sys.exit(3)
    if mode == "sleep":
        time.sleep(30)
    if os.environ.get("FAKE_MODEL_LOG"):  # where did recaudit put the model directory?
        with open(os.environ["FAKE_MODEL_LOG"], "a") as fh:
            fh.write(model_dir + "\n")
    params = json.loads(Path(params_path).read_text())
    df = pd.read_parquet(train_path)
    items = np.sort(df["item"].unique())
    index = {it: j for j, it in enumerate(items.tolist())}
    pop = np.zeros(len(items))
    trans = np.zeros((len(items), len(items)))
    for _, g in df.sort_values("timestamp", kind="stable").groupby("user", sort=True):
        seq = [index[i] for i in g["item"].tolist()]
        for a, b in zip(seq, seq[1:]):
            trans[a, b] += 1
        for a in seq:
            pop[a] += 1
    rng = np.random.default_rng(None if mode == "unseeded" else int(seed))
    noise = rng.normal(size=len(items)) * params.get("noise", 0.5)
    np.savez(Path(model_dir) / "model.npz", items=items, pop=pop + noise, trans=trans)


def rank(model_dir, queries_path, k, output, mode="ok"):
    if mode == "crash":
        raise SystemExit("fake ranker: cannot rank (on purpose)")
    if mode == "nothing":
        return
    if mode == "garbage":
        Path(output).write_text("this is not parquet")
        return
    m = np.load(Path(model_dir) / "model.npz", allow_pickle=True)
    items, pop, trans = m["items"], m["pop"], m["trans"]
    index = {it: j for j, it in enumerate(items.tolist())}
    q = pd.read_parquet(queries_path)
    k = int(k)
    rows = []
    for qid, ctx in zip(q["query"], q["context"]):
        s = pop.copy()
        known = [index[c] for c in ctx if c in index]
        if known:
            s = s + 10.0 * trans[known[-1]]
        order = np.lexsort((np.arange(len(items)), -s))[:k]
        for r, j in enumerate(order):
            rows.append((int(qid), r + 1, items[j], float(s[j])))
    out = pd.DataFrame(rows, columns=["query", "rank", "item", "score"])
    if mode == "scores":
        out = out.drop(columns="rank").sample(frac=1.0, random_state=0)
    elif mode == "ranks":
        out = out.drop(columns="score")
    elif mode == "unknown-item":
        out.loc[3, "item"] = "nobody-knows-me" if isinstance(out.loc[0, "item"], str) else 10**9
    elif mode == "dup-rank":
        out.loc[1, "rank"] = 1
    elif mode == "dup-item":
        out.loc[1, "item"] = out.loc[0, "item"]
    elif mode == "missing-query":
        out = out[out["query"] != 2]
    elif mode == "extra-query":
        out.loc[0, "query"] = 999
    elif mode == "no-item-column":
        out = out.rename(columns={"item": "movie"})
    out.to_parquet(output)


if __name__ == "__main__":
    {"train": train, "rank": rank}[sys.argv[1]](*sys.argv[2:])
    # Skip interpreter teardown: on a loaded machine pyarrow's thread pools sometimes abort it
    # (SIGABRT, "terminate called without an active exception") after the work is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
