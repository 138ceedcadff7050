"""The checks of the conformance kit: each raises ``AssertionError`` saying what broke, or
:class:`~recaudit.errors.ModelError` when the model breaks the protocol itself (``fit`` not
returning the model, ``rank`` not returning one :class:`~recaudit.data.RankLists` row per
query: :func:`recaudit.models.checked_rank`)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from recaudit.data import Interactions, Queries, RankLists, holdout_last
from recaudit.metrics import mrr_batch
from recaudit.models import checked_fit as _fit
from recaudit.models import checked_rank as _rank

__all__ = ["planted_log", "leave_last_out", "next_item_mrr", "popularity_ranklists",
           "check_rank_shapes", "check_topk_consistent", "check_determinism",
           "check_seed_changes", "check_deletion_changes", "check_inputs_not_mutated",
           "check_targets_not_read", "check_query_independence", "check_learns",
           "check_global_rng_untouched", "check_params_round_trip", "check_unfitted_use",
           "check_pickling", "check_numpy_seed"]

ModelFactory = Callable[[], Any]


def planted_log(n_users: int = 30, n_items: int = 20, length: int = 20, follow: float = 0.8,
                seed: int = 0) -> Interactions:
    """Each user walks the item cycle ``i -> (i + 1) mod n_items`` with probability ``follow``
    and jumps to a uniformly random item otherwise. Timestamps are increasing per user with
    random gaps and interleaved across users (float seconds)."""
    rng = np.random.default_rng(seed)
    users = np.repeat(np.arange(n_users), length)
    items = np.empty(n_users * length, dtype=np.int64)
    for u in range(n_users):
        cur = rng.integers(n_items)
        for j in range(length):
            items[u * length + j] = cur
            cur = (cur + 1) % n_items if rng.random() < follow else rng.integers(n_items)
    gaps = rng.exponential(100.0, size=(n_users, length)) + 1.0
    start = rng.uniform(0, 500.0, size=(n_users, 1))
    ts = (start + np.cumsum(gaps, axis=1)).ravel()
    return Interactions.from_codes(users, items, ts, n_users=n_users, n_items=n_items,
                                   name="planted")


def leave_last_out(log: Interactions) -> tuple[Interactions, Queries]:
    """Train = all but each user's last interaction; one query per user (>= 2 interactions)
    asking for that last item from the training sequence (:func:`recaudit.data.holdout_last`)."""
    return holdout_last(log, min_length=2)


def next_item_mrr(lists: RankLists, target: np.ndarray) -> float:
    """Mean reciprocal rank of ``target`` in full rank lists (0 when absent)."""
    return float(mrr_batch(lists.items, np.asarray(target)).mean())


def popularity_ranklists(train: Interactions, n_queries: int) -> RankLists:
    """Every query gets the catalogue by training popularity (ties by lower code)."""
    order = np.lexsort((np.arange(train.n_items), -train.item_counts()))
    return RankLists(np.broadcast_to(order, (n_queries, train.n_items)))


# ---------------------------------------------------------------------------------- checks
def check_rank_shapes(model, train: Interactions, queries: Queries, k: int = 5) -> None:
    """Shapes, id ranges, distinct rows, non-increasing scores; ``Interactions`` queries."""
    full = _rank(model, queries)
    top = _rank(model, queries, k=k)
    n, m = len(queries), train.n_items
    assert full.items.shape[0] == n, f"full ranking has {full.items.shape[0]} rows, expected {n}"
    assert 1 <= full.depth <= m, f"full ranking depth {full.depth} not in [1, {m}]"
    assert top.items.shape == (n, min(k, full.depth)), f"top-{k} shape {top.items.shape}"
    for lists in (full, top):
        items = lists.items
        assert items.dtype == np.int32, f"items dtype {items.dtype}, expected int32"
        assert ((items >= 0) & (items < m)).all(), "item codes outside [0, n_items) (padding?)"
        srt = np.sort(items, axis=1)
        assert not (srt[:, 1:] == srt[:, :-1]).any(), "an item appears twice in one list"
        if lists.scores is not None:
            assert (np.diff(lists.scores, axis=1) <= 0).all(), "scores increase along a list"
    by_log = _rank(model, train, k=k)
    n_active = int((train.user_counts() > 0).sum())
    assert by_log.items.shape == (n_active, min(k, full.depth)), \
        f"rank(Interactions) gave {by_log.items.shape}, expected one row per active user"


def check_topk_consistent(model, queries: Queries, ks=(1, 3, 7)) -> None:
    """The top-k list is the first k positions of the full list."""
    full = _rank(model, queries)
    for k in ks:
        top = _rank(model, queries, k=k)
        kk = min(k, full.depth)
        assert np.array_equal(top.items, full.items[:, :kk]), f"top-{k} != full[:, :{k}]"


def _param_bytes(model) -> bytes | None:
    net = getattr(model, "network_", None)
    if net is None or not hasattr(net, "state_dict"):
        return None
    return b"".join(v.detach().cpu().numpy().tobytes() for v in net.state_dict().values())


def check_determinism(make_model: ModelFactory, train: Interactions, queries: Queries,
                      seed: int = 0) -> RankLists:
    """Two fits with the same data and seed: bit-identical parameters (when exposed as
    ``network_``) and bit-identical rank lists (items and scores)."""
    a, b = _fit(make_model(), train, seed=seed), _fit(make_model(), train, seed=seed)
    pa, pb = _param_bytes(a), _param_bytes(b)
    assert pa == pb, "parameters differ between two fits with the same seed"
    la, lb = _rank(a, queries), _rank(b, queries)
    assert la.equals(lb), "rank lists differ between two fits with the same seed"
    return la


def check_seed_changes(make_model: ModelFactory, train: Interactions, queries: Queries) -> None:
    """A different seed gives different rank lists (the seed controls the randomness)."""
    a = _rank(_fit(make_model(), train, seed=0), queries)
    b = _rank(_fit(make_model(), train, seed=1), queries)
    assert not a.equals(b), "seeds 0 and 1 give identical rank lists: is the seed used?"


def check_deletion_changes(make_model: ModelFactory, train: Interactions, queries: Queries,
                           seed: int = 0) -> None:
    """Deleting one training interaction changes the rank lists (same seed)."""
    a = _rank(_fit(make_model(), train, seed=seed), queries)
    drop = np.ones(len(train), dtype=bool)
    drop[len(train) // 3] = False
    b = _rank(_fit(make_model(), train.take(drop), seed=seed), queries)
    assert not np.array_equal(a.items, b.items), \
        "deleting a training interaction left every rank list unchanged"


def _snapshot(obj) -> list[tuple[str, bytes, bool]]:
    out = []
    for name, v in sorted(vars(obj).items()):
        if isinstance(v, np.ndarray):
            out.append((name, v.tobytes(), bool(v.flags.writeable)))
    return out


def check_inputs_not_mutated(make_model: ModelFactory, train: Interactions,
                             queries: Queries) -> None:
    """fit and rank leave the content and the writeable flags of their inputs unchanged."""
    before_t, before_q, fp = _snapshot(train), _snapshot(queries), train.fingerprint()
    model = _fit(make_model(), train, seed=0)
    _rank(model, queries)
    _rank(model, queries, k=2)
    _rank(model, train, k=2)
    assert _snapshot(train) == before_t, "fit/rank modified the training log"
    assert _snapshot(queries) == before_q, "rank modified the queries"
    assert train.replace().fingerprint() == fp, "training log content changed"


def check_targets_not_read(make_model: ModelFactory, train: Interactions,
                           queries: Queries) -> None:
    """Ranking never looks at the queries' ground truth: scrambled or hidden targets give the
    same lists."""
    model = _fit(make_model(), train, seed=0)
    ref = _rank(model, queries)
    rng = np.random.default_rng(0)
    for target in (rng.permutation(queries.target), np.full(len(queries), -1)):
        q2 = Queries(queries.user, queries.context_indptr, queries.context_item,
                     queries.context_time, target, queries.timestamp, queries.n_items,
                     queries.n_users)
        assert _rank(model, q2).equals(ref), "rank lists depend on the queries' targets"


def check_query_independence(make_model: ModelFactory, train: Interactions,
                             queries: Queries) -> None:
    """Each query's answer depends on that query only: ranking a reversed subset gives the
    same rows (scores compared with a float tolerance, as batch shapes change summations)."""
    model = _fit(make_model(), train, seed=0)
    ref = _rank(model, queries)
    rows = np.arange(len(queries))[::-2].copy()
    sub = _rank(model, queries.subset(rows))
    if ref.scores is not None and sub.scores is not None:
        a = np.take_along_axis(ref.scores[rows], np.argsort(ref.items[rows], 1), 1)
        b = np.take_along_axis(sub.scores, np.argsort(sub.items, 1), 1)
        assert np.allclose(a, b, rtol=1e-4, atol=1e-5), "a query's scores depend on its batch"
    else:
        agree = (ref.items[rows, :3] == sub.items[:, :3]).mean()
        assert agree > 0.95, "a query's rank list depends on the other queries of the batch"


def check_global_rng_untouched(make_model: ModelFactory, train: Interactions,
                               queries: Queries) -> None:
    """fit and rank neither read nor reseed numpy's or torch's global random generators."""
    import torch

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        return bool(np.array_equal(a, b))

    np_state = np.random.get_state(legacy=False)
    t_state = torch.random.get_rng_state()
    _rank(_fit(make_model(), train, seed=0), queries)
    assert same(np_state, np.random.get_state(legacy=False)), \
        "numpy's global random state changed"
    assert torch.equal(t_state, torch.random.get_rng_state()), \
        "torch's global random state changed (use a seeded torch.Generator)"


def check_params_round_trip(make_model: ModelFactory) -> None:
    """``get_params()`` is plain data that rebuilds an equal model, and the parameters survive
    a JSON round trip (what a results store keeps)."""
    import json

    model = make_model()
    params = model.get_params()
    assert isinstance(params, dict), "get_params() must return a dict"
    again = type(model)(**json.loads(json.dumps(params)))
    assert again.get_params() == params, "Model(**get_params()) has other parameters"
    config = getattr(model, "config", None)
    if config is not None:
        assert getattr(again, "config", None) == config, "rebuilt model has another config"


def check_unfitted_use(make_model: ModelFactory, queries: Queries) -> None:
    """Ranking with a model that was never fitted is a ``RuntimeError`` saying so (not an
    ``AttributeError`` from deep inside)."""
    model = make_model()
    try:
        model.rank(queries)
    except RuntimeError as exc:
        assert "fit" in str(exc), f"unfitted rank() error does not mention fit: {exc}"
    else:  # pragma: no cover - the failure branch
        raise AssertionError("rank() on an unfitted model did not raise RuntimeError")


def check_pickling(make_model: ModelFactory, train: Interactions, queries: Queries) -> None:
    """Unfitted and fitted models survive pickling; a fitted copy ranks identically (models
    travel to worker processes)."""
    pickle.loads(pickle.dumps(make_model()))
    model = _fit(make_model(), train, seed=0)
    copy = pickle.loads(pickle.dumps(model))
    assert _rank(copy, queries).equals(_rank(model, queries)), "an unpickled model ranks otherwise"


def check_numpy_seed(make_model: ModelFactory, train: Interactions, queries: Queries) -> None:
    """``fit(seed=np.int64(s))`` trains the same model as ``fit(seed=s)``."""
    a = _rank(_fit(make_model(), train, seed=3), queries)
    b = _rank(_fit(make_model(), train, seed=np.int64(3)), queries)
    assert a.equals(b), "a numpy integer seed trains another model than the same Python int"


def check_learns(make_model: ModelFactory, log: Interactions | None = None, seed: int = 0,
                 margin: float = 1.2) -> tuple[float, float]:
    """Next-item MRR on a planted-pattern log beats popularity by a factor ``margin``."""
    log = planted_log() if log is None else log
    train, queries = leave_last_out(log)
    mrr = next_item_mrr(_rank(_fit(make_model(), train, seed=seed), queries), queries.target)
    pop = next_item_mrr(popularity_ranklists(train, len(queries)), queries.target)
    assert mrr > margin * pop, f"model MRR {mrr:.3f} does not beat popularity {pop:.3f}"
    return mrr, pop
