"""An audit's disk, peak memory and time against the catalogue and the queries: the lists kept
to ``metrics.depth`` (100) against the whole ranking of every query (the anchor: what an audit
did before the default depth, and what ``depth = "full"`` still does).

For every catalogue (1k, 10k, 100k items) and number of test queries (1k, 10k, 100k), the part
of a trial that grows with them is timed, for a baseline and a perturbed model:

1. ranking: a model's scores of the whole catalogue for the queries (synthetic: the dot
   product of 16-dimensional query and item vectors, rounded to 1/256 so that ties occur, the
   perturbed model's items moved a little: a sequential model's ``h W^T``), ranked best
   first with ties to the lower code;
2. caching: the baseline's lists written to the baseline cache
   (:class:`recaudit.experiment.ArrayCache`) and read back;
3. comparing: the similarity panel (RBO and its bounds, the finite RBO sum, average overlap,
   FRBO@10, Jaccard@10) and both models' accuracy panels (MRR, HR@10, NDCG@10).

The anchor is the code before the depth: it scores every query into one matrix and ranks the
whole catalogue (a copy of the former ``top_k_from_scores(scores, None)``, as
``SequentialRecommender.rank(k=None)`` did), caches ``int32`` lists uncompressed and compares
the whole lists. recaudit's path scores 512 queries
at a time (the sequential models' chunk on the CPU) and keeps the first 100 items of each
(:func:`recaudit.models.rank_chunks`), caches them in the smallest code type, compressed
(``uint16`` up to 65,536 items, ``int32`` above), and compares them at depth 100. Where both
run, the lists of the first queries are checked to agree (the anchor's cut to 100 items).

The anchor needs about 30 bytes per query and item (the score matrix, the sort's ``int64``
order, the lists and their scores), so it runs on at most ``--anchor-cells`` query-item pairs
(the first queries): its figures for more queries are scaled per query from those (marked
``~``); every figure of recaudit's path is measured whole. Peak memory is what
``tracemalloc`` sees numpy allocate (the numba kernels' scratch, a few MB, is not counted).
recaudit's peak is split into ``lists``, the two models' lists it keeps (items and scores, 8
bytes a rank: they grow with the queries, whatever the chunk), ``rank/chunk``, the rest of
its ranking's peak over one chunk's scores (512 queries x the catalogue, float32), and
``cache+cmp``, what the cache's round trip and the panels add to the lists (a few times the
lists' codes). BLAS runs on one thread (``OPENBLAS_NUM_THREADS``, unless set).

    python benchmarks/bench_depth.py            # 9 cells, about 8 minutes on 2 busy cores
    python benchmarks/bench_depth.py --quick    # 1k and 10k items x 1k and 10k queries

Measured on 2026-12-08 (2 cores, one busy with training, load ~6): cache bytes a query 151
(1k items), 184 (10k), 262 (100k: int32 codes), whatever the queries, against 4,000,
40,000 and 400,000 (26x, 218x, 1,525x); ranking's peak beyond the lists kept 1.0-1.7x one
chunk's scores; peak 357 MB at 100k items x 100k queries against ~267 GB (747x); time 4.5x
(1k items) to 34x (100k items) shorter, 258 s for the largest cell (the anchor: ~76 min).
On ml-latest-small (300 users: 4,198 queries, 6,188 items, GRU4Rec) a baseline took 103.9 MB
before, 46.3 MB with ``depth = "full"`` (the same lists in uint16, compressed; the same
per-query values) and 0.75 MB at the default depth.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # the scores' products on one thread (set before numpy)

import numpy as np  # noqa: E402

from recaudit.audit._baselines import code_dtype  # noqa: E402
from recaudit.data import RankLists  # noqa: E402
from recaudit.experiment import ArrayCache  # noqa: E402
from recaudit.metrics import accuracy_panel, similarity_panel  # noqa: E402
from recaudit.models import rank_chunks  # noqa: E402
from recaudit.models._protocol import top_order  # noqa: E402

DIM = 16
CHUNK = 512      # SequentialRecommender._chunk_size on the CPU
K, P = 10, 0.9
MB = 1 << 20


class _Scorer:
    """A model's scores: ``queries @ items.T`` (float32), rounded to 1/256 so ties occur."""

    def __init__(self, items: np.ndarray) -> None:
        self.items_t = np.ascontiguousarray(items.T)

    def __call__(self, queries: np.ndarray) -> np.ndarray:
        s = queries @ self.items_t
        np.multiply(s, 256, out=s)
        np.rint(s, out=s)
        return s


def _models(m: int, seed: int) -> tuple[_Scorer, _Scorer]:
    rng = np.random.default_rng(seed)
    items = rng.standard_normal((m, DIM), dtype=np.float32)
    moved = items + np.float32(0.05) * rng.standard_normal((m, DIM), dtype=np.float32)
    return _Scorer(items), _Scorer(moved)


class _Peak:
    """Peak bytes numpy allocates in a block beyond what it held at its start
    (``tracemalloc``), and what it still holds at its end (``kept``)."""

    def __enter__(self) -> _Peak:
        tracemalloc.reset_peak()
        self.held = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc: object) -> None:
        now, peak = tracemalloc.get_traced_memory()
        self.peak, self.kept = peak - self.held, now - self.held


def _cache_and_compare(name: str, lists: list[RankLists], targets: np.ndarray, m: int,
                       folder: Path, **put: object) -> tuple[float, float, float]:
    """The baseline's lists through the cache (``put``: as the audit writes them), then the
    panels: the seconds of each, and the mean RBO."""
    t0 = time.perf_counter()
    cache = ArrayCache(folder)
    cache.put(name, **put, fit_seconds=np.asarray(0.0), rank_seconds=np.asarray(0.0))
    base = RankLists(cache.get(name)["items"])
    t1 = time.perf_counter()
    panel = similarity_panel(base.items, lists[1].items, k=K, p=P, n_items=m)
    for items in (base.items, lists[1].items):
        accuracy_panel(items, targets, k=K)
    return t1 - t0, time.perf_counter() - t1, float(np.mean(panel["rbo"]))


def _old_top_k_from_scores(scores: np.ndarray, k: int | None) -> RankLists:
    """``recaudit.models.top_k_from_scores`` as it was before :func:`rank_chunks` (the anchor's
    ranking; for the whole catalogue ``top_order`` sorts each block of rows, unchanged)."""
    n, m = scores.shape
    depth = int(np.isfinite(scores).sum(axis=1).min()) if n else 0
    if k is not None:
        depth = min(depth, int(k))
    items = np.empty((n, depth), dtype=np.int32)
    block = max(1, (16 << 20) // max(m, 1))
    for lo in range(0, n, block):
        items[lo:lo + block] = top_order(scores[lo:lo + block], depth)
    return RankLists(items, np.take_along_axis(scores, items, axis=1))


def _today(models, queries: np.ndarray, targets: np.ndarray, m: int, folder: Path) -> dict:
    """The anchor: every query's scores in one matrix (``SequentialRecommender._scores``), the
    whole catalogue ranked, ``int32`` lists cached uncompressed, the whole lists compared."""
    n = len(queries)
    t0 = time.perf_counter()
    with _Peak() as ranking:
        lists = []
        for model in models:
            scores = np.empty((n, m), dtype=np.float32)
            for lo in range(0, n, CHUNK):
                scores[lo:lo + CHUNK] = model(queries[lo:lo + CHUNK])
            lists.append(_old_top_k_from_scores(scores, None))
            del scores
    rank = time.perf_counter() - t0
    with _Peak() as rest:
        cache, compare, rbo = _cache_and_compare("today", lists, targets, m, folder,
                                                 items=lists[0].items)
    return {"rank": rank, "cache": cache, "compare": compare, "rbo": rbo,
            "lists": lists[0].items, "bytes": (folder / "today.npz").stat().st_size,
            "peak": max(ranking.peak, ranking.kept + rest.peak)}


def _new(models, queries: np.ndarray, targets: np.ndarray, m: int, depth: int,
         folder: Path) -> dict:
    """recaudit's path: a chunk of queries scored and ranked at a time, the first ``depth``
    items kept, cached in the smallest code type and compressed (as ``_baseline`` writes)."""
    n = len(queries)
    t0 = time.perf_counter()
    with _Peak() as ranking:
        lists = [rank_chunks((model(queries[lo:lo + CHUNK]) for lo in range(0, n, CHUNK)),
                             depth, n) for model in models]
    rank = time.perf_counter() - t0
    with _Peak() as rest:
        cache, compare, rbo = _cache_and_compare(
            "new", lists, targets, m, folder, compress=True,
            items=lists[0].items.astype(code_dtype(m)), depth=np.asarray(depth, np.int64))
    return {"rank": rank, "cache": cache, "compare": compare, "rbo": rbo,
            "lists": lists[0].items, "bytes": (folder / "new.npz").stat().st_size,
            "kept": ranking.kept, "work": ranking.peak - ranking.kept, "rest": rest.peak,
            "peak": max(ranking.peak, ranking.kept + rest.peak)}


def _header(depth: int) -> None:
    print(f"depth {depth}, k {K}, p {P}; chunks of {CHUNK} queries; '~': the anchor ran on "
          "the first queries, scaled per query; peak MB: what numpy holds at most\n")
    print(f"{'items':>7} {'queries':>8} | {'cache bytes a query':^20} | "
          f"{'peak MB (recaudit: lists, rank/chunk, cache+cmp)':^50} | "
          f"{'seconds: rank + cache + compare':^30}")
    print(f"{'':>7} {'':>8} | {'today':>8} {'new':>5} {'ratio':>5} | {'today':>8} {'new':>6} "
          f"{'ratio':>5} {'lists':>6} {'rank/chunk':>10} {'cache+cmp':>9} | {'today':>8} "
          f"{'new':>6} {'ratio':>5} {'rbo':>6}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1k and 10k items and queries")
    ap.add_argument("--depth", type=int, default=100, help="recaudit's depth (default 100)")
    ap.add_argument("--anchor-cells", type=float, default=5e7,
                    help="query-item pairs the anchor ranks at most (default 5e7: ~1.5 GB)")
    args = ap.parse_args()
    sizes = (1_000, 10_000) if args.quick else (1_000, 10_000, 100_000)
    with tempfile.TemporaryDirectory() as tmp:   # compile the kernels before measuring
        rng = np.random.default_rng(0)
        models, q = _models(300, 0), rng.standard_normal((600, DIM), dtype=np.float32)
        _new(models, q, rng.integers(0, 300, 600), 300, args.depth, Path(tmp))
        _today(models, q, rng.integers(0, 300, 600), 300, Path(tmp))
    tracemalloc.start()
    _header(args.depth)
    for m in sizes:
        models = _models(m, seed=m)
        for n in sizes:
            rng = np.random.default_rng(n)
            queries = rng.standard_normal((n, DIM), dtype=np.float32)
            targets = rng.integers(0, m, n)
            n_a = int(min(n, max(CHUNK, args.anchor_cells // m)))
            with tempfile.TemporaryDirectory() as tmp:
                new = _new(models, queries, targets, m, args.depth, Path(tmp))
                today = _today(models, queries[:n_a], targets[:n_a], m, Path(tmp))
            if not np.array_equal(new["lists"][:n_a], today["lists"][:, :args.depth]):
                raise SystemExit(f"{m} items, {n} queries: the lists disagree")
            scale = n / n_a
            mark = "~" if n_a < n else " "
            parts_t = [scale * today[x] for x in ("rank", "cache", "compare")]
            parts_n = [new[x] for x in ("rank", "cache", "compare")]
            b_today, b_new = today["bytes"] / n_a, new["bytes"] / n
            p_today, p_new = today["peak"] * scale, new["peak"]
            chunk = min(n, CHUNK) * m * 4
            print(f"{m:>7,} {n:>8,} | {mark}{b_today:>7,.0f} {b_new:>5,.0f} "
                  f"{b_today / b_new:>4.0f}x | {mark}{p_today / MB:>7,.0f} {p_new / MB:>6,.0f} "
                  f"{p_today / p_new:>4.0f}x {new['kept'] / MB:>6,.0f} "
                  f"{new['work'] / chunk:>9.1f}x {new['rest'] / MB:>9,.0f} | "
                  f"{mark}{sum(parts_t):>7,.1f} {sum(parts_n):>6,.1f} "
                  f"{sum(parts_t) / sum(parts_n):>4.1f}x {new['rbo']:>6.3f}", flush=True)
            print(f"{'':>17}  seconds: today " + " + ".join(f"{x:,.1f}" for x in parts_t)
                  + ", recaudit " + " + ".join(f"{x:,.1f}" for x in parts_n), flush=True)


if __name__ == "__main__":
    main()
