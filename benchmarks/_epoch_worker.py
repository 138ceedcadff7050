"""Measure one model's training epochs and ranking in a fresh process (used by bench_models).

Reads one JSON object from argv[1]: ``dataset`` (registry name), ``min_user_interactions``,
``ratio`` and optionally ``floor`` (per-user temporal split), ``model``, ``params``, ``epochs``,
``threads``, ``device``, ``rank`` (bool). Prints one JSON line: per-epoch wall seconds (``None``
where the model does not record them), fit and rank wall seconds, training rows. Runs against whichever ``recaudit`` is
first on ``PYTHONPATH``: this checkout, or the previous implementation extracted from git.
"""

import json
import sys
import time


def main() -> None:
    job = json.loads(sys.argv[1])
    from recaudit.data import datasets, filter_min_interactions, split
    from recaudit.models import create

    log = filter_min_interactions(datasets.load(job["dataset"]), job["min_user_interactions"])
    floor = {"floor": job["floor"]} if "floor" in job else {}  # the anchor predates ``floor``
    sp = split(log, "temporal-ratio", ratio=job["ratio"], **floor)
    params = dict(job["params"], epochs=job["epochs"], num_threads=job["threads"],
                  device=job["device"])
    model = create(job["model"], **params)
    t0 = time.perf_counter()
    model.fit(sp.train, seed=0)
    fit = time.perf_counter() - t0
    epochs = [h.get("seconds") for h in getattr(model, "history_", [])]
    rank = None
    if job.get("rank"):
        t0 = time.perf_counter()
        model.rank(sp.queries)
        rank = time.perf_counter() - t0
    print(json.dumps({"epoch_seconds": epochs, "fit": fit, "rank": rank,
                      "train_rows": len(sp.train), "queries": len(sp.queries)}))


if __name__ == "__main__":
    main()
