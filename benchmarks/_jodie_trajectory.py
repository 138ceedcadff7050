"""Print JODIE's per-epoch training loss on a small synthetic log (used by bench_models).

Runs against whichever ``recaudit`` is first on ``PYTHONPATH``. With the current
implementation the groups are set to the previous implementation's rule (runs of rows with the
same global t-batch index, accumulated until they hold ``batch_size`` rows), so both train on
the same groups; the only remaining difference is documented in
``recaudit.models.sequential._jodie._model``.
"""

import json

import numpy as np

from recaudit.data import split, synthetic
from recaudit.models import create


def main() -> None:
    train = split(synthetic(seed=1, n_users=60, n_items=40), "temporal-ratio", ratio=0.9).train
    model = create("jodie", epochs=3, embedding_dim=16, batch_size=64)
    kwargs = {}
    if "_group_ptr" in model.fit.__code__.co_varnames:  # the current implementation
        from recaudit.models.sequential._jodie._plan import t_batches  # (an anchor has none)

        tb = t_batches(train)
        bounds = np.flatnonzero(np.diff(tb)) + 1
        starts, ends = np.concatenate([[0], bounds]), np.concatenate([bounds, [len(train)]])
        ptr, count = [0], 0
        for j, (lo, hi) in enumerate(zip(starts, ends)):
            count += hi - lo
            if count >= 64 or j == len(starts) - 1:
                ptr.append(int(hi))
                count = 0
        kwargs["_group_ptr"] = np.array(ptr)
    model.fit(train, seed=0, **kwargs)
    print(json.dumps([h["loss"] for h in model.history_]))


if __name__ == "__main__":
    main()
