"""Rank-list similarity: recaudit.metrics against the `rbo` PyPI package (the anchor).

Runs both on the same random pairs and prints time per pair and the ratio:

1. full-catalogue rankings of 1k and 10k items (random permutations);
2. top-k lists (k = 10 and 100, cut from random rankings of 10k items);
3. the batch goal: 100k pairs of full rankings of 5k items, timed in chunks of 10k pairs (only
   the metric calls are timed), with the process's peak resident memory.

The anchor is `rbo.RankingSimilarity(a, b).rbo_ext(p)` (its correct extrapolated RBO; the
package's `rbo(ext=True)` is wrong for lists of different lengths). It is a pure-Python loop, so
it is timed on a subsample of the pairs. Values are cross-checked on every timed anchor pair.

Install the anchor with `pip install --no-deps rbo==0.1.3 tqdm`: its metadata pins numpy < 2,
which recaudit's numpy >= 2 contradicts, although the code runs fine with numpy 2.

    python benchmarks/bench_similarity.py            # default, about a minute on 2 cores
    python benchmarks/bench_similarity.py --quick    # smoke run, a few seconds
    python benchmarks/bench_similarity.py --threads 2 --full-array   # also one 100k x 5k call
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _permutations(rng: np.random.Generator, rows: int, n_items: int) -> np.ndarray:
    return rng.permuted(np.tile(np.arange(n_items, dtype=np.int32), (rows, 1)), axis=1)


class _Clock:
    """Wall and process CPU time (all threads) of a block, in seconds."""

    wall: float
    cpu: float

    def __enter__(self) -> _Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def _time_anchor(rbo_pkg, a: np.ndarray, b: np.ndarray, p: float) -> tuple[float, float, np.ndarray]:
    la, lb = a.tolist(), b.tolist()
    values = np.empty(len(la))
    with _Clock() as clock:
        for i, (x, y) in enumerate(zip(la, lb)):
            values[i] = rbo_pkg.RankingSimilarity(x, y).rbo_ext(p=p)
    return clock.wall / len(la), clock.cpu / len(la), values


def _time_ours_scalar(a: np.ndarray, b: np.ndarray, p: float) -> float:
    from recaudit.metrics import rbo

    la, lb = a.tolist(), b.tolist()
    t0 = time.perf_counter()
    for x, y in zip(la, lb):
        rbo(x, y, p)
    return (time.perf_counter() - t0) / len(la)


def _time_ours_batch(
    a: np.ndarray, b: np.ndarray, p: float, repeats: int = 3, full_scan: bool = False
) -> tuple[float, float, np.ndarray]:
    from recaudit.metrics import rbo_batch

    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeats):
        with _Clock() as clock:
            out = rbo_batch(a, b, p, full_scan=full_scan)
        best, best_cpu = min(best, clock.wall), min(best_cpu, clock.cpu)
    return best / a.shape[0], best_cpu / a.shape[0], out


def compare(rng: np.random.Generator, rbo_pkg, *, quick: bool, p: float) -> None:
    cases = [
        # (label, catalogue, k or None, anchor pairs, our batch pairs)
        ("full 1k", 1_000, None, 10 if quick else 100, 2_000 if quick else 20_000),
        ("full 10k", 10_000, None, 2 if quick else 10, 200 if quick else 2_000),
        ("top-10 of 10k", 10_000, 10, 200 if quick else 2_000, 10_000 if quick else 100_000),
        ("top-100 of 10k", 10_000, 100, 100 if quick else 1_000, 10_000 if quick else 100_000),
    ]
    print("wall: elapsed time per pair; cpu: process CPU time per pair, all threads summed (the work,")
    print("less sensitive to other load). Ratios are anchor / ours.\n")
    header = (
        f"{'case':<16}{'rbo pkg wall':>13}{'ours batch':>12}{'ratio':>8}"
        f"{'rbo pkg cpu':>13}{'ours cpu':>10}{'ratio':>8}{'ours scalar':>13}{'ratio':>7}{'max|diff|':>11}"
    )
    units = f"{'':<16}{'us/pair':>13}{'us/pair':>12}{'':>8}{'us/pair':>13}{'us/pair':>10}{'':>8}{'us/pair':>13}"
    print(header + "\n" + units)
    full_scans: list[tuple[str, float]] = []
    print("-" * len(header))
    for label, n_items, k, n_anchor, n_ours in cases:
        if k is None:
            a, b = _permutations(rng, n_ours, n_items), _permutations(rng, n_ours, n_items)
        else:
            # top-k of random rankings: rows are random k-subsets in random order
            a = np.stack([rng.choice(n_items, k, replace=False) for _ in range(n_ours)]).astype(np.int32)
            b = np.stack([rng.choice(n_items, k, replace=False) for _ in range(n_ours)]).astype(np.int32)
        ours_batch, ours_cpu, values = _time_ours_batch(a, b, p)
        full_wall, _, full_values = _time_ours_batch(a, b, p, repeats=1, full_scan=True)
        if full_values.tobytes() != values.tobytes():  # the early exit must never change a value
            raise RuntimeError(f"{label}: full_scan=True changed a value")
        full_scans.append((label, full_wall))
        n_scalar = min(n_ours, max(n_anchor, 200))
        _time_ours_scalar(a[:2], b[:2], p)  # warm the scalar path
        ours_scalar = _time_ours_scalar(a[:n_scalar], b[:n_scalar], p)
        if rbo_pkg is None:
            print(
                f"{label:<16}{'(absent)':>13}{ours_batch * 1e6:>12.3f}{'':>8}{'':>13}"
                f"{ours_cpu * 1e6:>10.3f}{'':>8}{ours_scalar * 1e6:>13.1f}"
            )
            continue
        anchor, anchor_cpu, ref = _time_anchor(rbo_pkg, a[:n_anchor], b[:n_anchor], p)
        diff = float(np.max(np.abs(ref - values[:n_anchor])))
        print(
            f"{label:<16}{anchor * 1e6:>13.1f}{ours_batch * 1e6:>12.3f}{anchor / ours_batch:>7.0f}x"
            f"{anchor_cpu * 1e6:>13.1f}{ours_cpu * 1e6:>10.3f}{anchor_cpu / ours_cpu:>7.0f}x"
            f"{ours_scalar * 1e6:>13.1f}{anchor / ours_scalar:>6.0f}x{diff:>11.1e}"
        )
    print("\nours with full_scan=True (no early exit; identical values), wall us/pair: " + ", ".join(
        f"{label} {t * 1e6:.3f}" for label, t in full_scans
    ))


def batch_goal(rng: np.random.Generator, *, quick: bool, p: float, full_array: bool) -> None:
    from recaudit.metrics import frbo_batch, jaccard_batch, rbo_batch

    n_items, chunk = 5_000, 10_000
    n_pairs = 20_000 if quick else 100_000
    base = _permutations(rng, chunk, n_items)  # reused with shifted row pairings
    rbo_batch(base[:10], base[1:11], p)  # load the cached kernels before timing
    rbo_batch(base, base[::-1], p)
    times = {"rbo ext": 0.0, "ext full": 0.0, "rbo min": 0.0, "rbo max": 0.0, "jaccard@10": 0.0, "frbo@20": 0.0}
    cpu = dict.fromkeys(times, 0.0)
    rss_before = _peak_rss_mb()
    for c in range(n_pairs // chunk):
        other = np.roll(base, c + 1, axis=0)
        for label, fn in (
            ("rbo ext", lambda o: rbo_batch(base, o, p)),
            ("ext full", lambda o: rbo_batch(base, o, p, full_scan=True)),
            ("rbo min", lambda o: rbo_batch(base, o, p, variant="min")),
            ("rbo max", lambda o: rbo_batch(base, o, p, variant="max")),
            ("jaccard@10", lambda o: jaccard_batch(base, o, 10)),
            ("frbo@20", lambda o: frbo_batch(base, o, 20, p)),
        ):
            with _Clock() as clock:
                fn(other)
            times[label] += clock.wall
            cpu[label] += clock.cpu
        del other
    mib = 2 * base.nbytes / 2**20
    print(f"\n{n_pairs:,} pairs x {n_items:,} items (chunks of {chunk:,} pairs, inputs {mib:.0f} MiB per chunk):")
    for label, t in times.items():
        print(f"  {label:<11} wall {t:6.2f} s ({t / n_pairs * 1e6:6.2f} us/pair)   cpu {cpu[label]:6.2f} s")
    print(f"  peak RSS {_peak_rss_mb():.0f} MiB (before the loop {rss_before:.0f} MiB)")
    if full_array:
        a = np.concatenate([np.roll(base, c, axis=0) for c in range(n_pairs // chunk)])
        b = np.concatenate([np.roll(base, c + 1, axis=0) for c in range(n_pairs // chunk)])
        t0 = time.perf_counter()
        rbo_batch(a, b, p)
        t = time.perf_counter() - t0
        print(f"  one call on [{a.shape[0]:,}, {n_items:,}] int32 arrays ({2 * a.nbytes / 2**30:.1f} GiB of input): "
              f"rbo ext {t:.2f} s; peak RSS {_peak_rss_mb():.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    parser.add_argument("--threads", type=int, default=None, help="numba threads (default: numba's)")
    parser.add_argument("--p", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--full-array", action="store_true", help="also time one call on the whole 100k x 5k batch (4 GB)"
    )
    args = parser.parse_args()

    import numba

    if args.threads is not None:
        numba.set_num_threads(args.threads)
    try:
        import rbo as rbo_pkg
    except ImportError:
        rbo_pkg = None
    print(f"numba threads: {numba.get_num_threads()} of {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f}; "
          f"rbo package: {'installed' if rbo_pkg else 'NOT installed'}; p = {args.p}\n")
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    compare(rng, rbo_pkg, quick=args.quick, p=args.p)
    batch_goal(rng, quick=args.quick, p=args.p, full_array=args.full_array)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
