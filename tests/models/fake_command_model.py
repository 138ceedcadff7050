"""A tiny recommender program for the command-model tests (run as a separate process).

    python fake_command_model.py train TRAIN SEED MODEL_DIR PARAMS [MODE]
    python fake_command_model.py rank MODEL_DIR QUERIES K OUTPUT [MODE]

It learns item-to-next-item transition counts plus popularity, and adds seeded noise of scale
``params["noise"]`` (default 0.5) to the item scores, so the seed, the data and the context all
matter. MODE makes it misbehave on purpose (see the tests). It reads and writes Parquet with
pyarrow alone: the tests start it hundreds of times, and pandas (which pyarrow's ``read_table``
and ``to_numpy`` import) would double each start.
"""

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


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
    log = pq.ParquetFile(train_path).read()  # (read_table would import pandas)
    user, item, when = (np.array(log.column(c).to_pylist())  # (to_numpy imports pandas)
                        for c in ("user", "item", "timestamp"))
    items, item_code = np.unique(item, return_inverse=True)
    _, user_code = np.unique(user, return_inverse=True)
    pop = np.zeros(len(items))
    trans = np.zeros((len(items), len(items)))
    order = np.lexsort((np.arange(len(user)), when, user_code))  # by user, then time
    for u in np.unique(user_code):
        seq = item_code[order[user_code[order] == u]].tolist()
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
    q = pq.ParquetFile(queries_path).read()
    k = int(k)
    names = items.tolist()  # Python ints or strs
    out = {"query": [], "rank": [], "item": [], "score": []}
    for qid, ctx in zip(q.column("query").to_pylist(), q.column("context").to_pylist()):
        s = pop.copy()
        known = [index[c] for c in ctx if c in index]
        if known:
            s = s + 10.0 * trans[known[-1]]
        order = np.lexsort((np.arange(len(items)), -s))[:k]
        for r, j in enumerate(order):
            for col, v in zip(out, (int(qid), r + 1, names[j], float(s[j]))):
                out[col].append(v)
    if mode == "scores":
        rows = np.random.default_rng(0).permutation(len(out["query"]))
        out = {c: [v[i] for i in rows] for c, v in out.items() if c != "rank"}
    elif mode == "ranks":
        del out["score"]
    elif mode == "unknown-item":
        out["item"][3] = "nobody-knows-me" if isinstance(out["item"][0], str) else 10**9
    elif mode == "dup-rank":
        out["rank"][1] = 1
    elif mode == "dup-item":
        out["item"][1] = out["item"][0]
    elif mode == "missing-query":
        keep = [i for i, qid in enumerate(out["query"]) if qid != 2]
        out = {c: [v[i] for i in keep] for c, v in out.items()}
    elif mode == "extra-query":
        out["query"][0] = 999
    elif mode == "no-item-column":
        out["movie"] = out.pop("item")
    pq.write_table(pa.table(out), output)

if __name__ == "__main__":
    {"train": train, "rank": rank}[sys.argv[1]](*sys.argv[2:])
    # Skip interpreter teardown: on a loaded machine pyarrow's thread pools sometimes abort it
    # (SIGABRT, "terminate called without an active exception") after the work is done.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
