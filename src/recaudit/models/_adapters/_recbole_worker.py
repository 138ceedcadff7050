"""RecBole worker: runs inside the *RecBole* interpreter (``RECAUDIT_RECBOLE_PYTHON``).

Standalone on purpose (it cannot import recaudit, whose environment differs). Usage:
``python _recbole_worker.py JOB_DIR``; ``JOB_DIR/job.json`` holds ``action`` (``fit`` or
``score``), ``model``, ``n_items`` and the RecBole ``config``. ``fit`` trains and saves
``model.pt``; ``score`` reads ``context.npy`` (right-aligned, -1 padded item codes) and writes
``scores.npy`` ``[n, n_items]`` in recaudit's item codes (NaN for items RecBole never saw).
Both write ``result.json``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(job_dir: str) -> None:
    job = Path(job_dir)
    spec = json.loads((job / "job.json").read_text())
    cfg = dict(spec["config"])
    threads = cfg.pop("worker_threads", None)
    import numpy as np
    import torch

    if threads:
        torch.set_num_threads(int(threads))
    sys.argv = sys.argv[:1]  # RecBole's Config parses the command line
    from recbole.config import Config
    from recbole.data import create_dataset, data_preparation
    from recbole.data.interaction import Interaction
    from recbole.utils import get_model, get_trainer, init_seed

    config = Config(model=spec["model"], dataset=cfg["dataset"], config_dict=cfg)
    init_seed(config["seed"], config["reproducibility"])
    dataset = create_dataset(config)
    train_data, _, _ = data_preparation(config, dataset)
    init_seed(config["seed"] + config["local_rank"], config["reproducibility"])
    model = get_model(config["model"])(config, train_data._dataset).to(config["device"])
    result: dict = {"max_len": int(config["MAX_ITEM_LIST_LENGTH"]),
                    "recbole_items": int(dataset.item_num)}
    if spec["action"] == "fit":
        trainer = get_trainer(config["MODEL_TYPE"], config["model"])(config, model)
        tic, cpu = time.perf_counter(), time.process_time()
        trainer.fit(train_data, valid_data=None, saved=False, show_progress=False)
        result["seconds"] = time.perf_counter() - tic
        result["cpu_seconds"] = time.process_time() - cpu
        torch.save(model.state_dict(), job / "model.pt")
    else:
        model.load_state_dict(torch.load(job / "model.pt", map_location=config["device"]))
        model.eval()
        ctx = np.load(job / "context.npy")
        tokens = dataset.field2id_token[config["ITEM_ID_FIELD"]]
        ours = np.array([int(t) for t in tokens[1:]], dtype=np.int64)   # internal id i+1
        to_internal = np.zeros(spec["n_items"], dtype=np.int64)
        to_internal[ours] = np.arange(1, len(tokens))
        n, width = ctx.shape
        seqs = np.zeros((n, width), dtype=np.int64)
        lens = np.zeros(n, dtype=np.int64)
        for q in range(n):
            known = [to_internal[c] for c in ctx[q] if c >= 0 and to_internal[c] > 0]
            seqs[q, :len(known)] = known
            lens[q] = max(len(known), 1)
        seq_field = config["ITEM_ID_FIELD"] + config["LIST_SUFFIX"]
        len_field = config["ITEM_LIST_LENGTH_FIELD"]
        out = np.full((n, spec["n_items"]), np.nan, dtype=np.float32)
        with torch.no_grad():
            for lo in range(0, n, 1024):
                inter = Interaction({seq_field: torch.from_numpy(seqs[lo:lo + 1024]),
                                     len_field: torch.from_numpy(lens[lo:lo + 1024])})
                s = model.full_sort_predict(inter.to(config["device"]))
                s = s.view(-1, dataset.item_num).float().cpu().numpy()
                out[lo:lo + 1024][:, ours] = s[:, 1:]
        np.save(job / "scores.npy", out)
    (job / "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
