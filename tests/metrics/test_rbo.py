"""RBO variants and average overlap: paper examples, closed forms, independent references."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from recaudit.metrics import average_overlap, average_overlap_batch, rbo, rbo_batch

SETTINGS = settings(max_examples=100, deadline=None)
rankings = st.lists(st.integers(0, 25), unique=True, min_size=1, max_size=18)
ps = st.floats(0.05, 0.95)
VARIANTS = ("ext", "min", "max")


def naive_overlaps(a, b, depth):
    """X_d = |a[:d] ∩ b[:d]| for d = 1..depth, by set intersection (prefix past the end = list)."""
    return [len(set(a[:d]) & set(b[:d])) for d in range(1, depth + 1)]


def naive_weighted_sum(a, b, p, depth):
    """(1 - p) * sum_{d <= depth} p^(d-1) X_d / d, straight from the definition."""
    xs = naive_overlaps(a, b, depth)
    return (1 - p) * math.fsum(p ** (d - 1) * x / d for d, x in enumerate(xs, start=1))


# --- Webber, Moffat & Zobel (2010), Fig. 5 worked example ---------------------------------------


def test_webber_fig5_average_overlap():
    # overlaps of abcdefg / zcavwxy at depths 1..7 are 0, 0, 2, 2, 2, 2, 2 (a and c from depth 3)
    assert naive_overlaps("abcdefg", "zcavwxy", 7) == [0, 0, 2, 2, 2, 2, 2]
    exact = Fraction(1, 7) * sum(Fraction(2, d) for d in range(3, 8))
    value = average_overlap("abcdefg", "zcavwxy")
    assert value == pytest.approx(float(exact), abs=1e-15)
    assert f"{value:.4f}" == "0.3122"


def test_webber_fig5_rbo_ext():
    value = rbo("abcdefg", "zcavwxy", p=0.9)
    # eq. 32 with s = l = 7: (1-p)/p * sum X_d/d p^d + X_7/7 p^7, exact rational arithmetic
    p = Fraction(9, 10)
    xs = [0, 0, 2, 2, 2, 2, 2]
    exact = (1 - p) / p * sum(Fraction(x, d) * p**d for d, x in enumerate(xs, 1)) + Fraction(2, 7) * p**7
    assert value == pytest.approx(float(exact), abs=1e-15)
    assert f"{value:.4f}" == "0.2882"


# --- closed forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 5, 100, 1000])
@pytest.mark.parametrize("p", [0.5, 0.9, 0.98])
def test_trunc_identical_full_lists_is_one_minus_p_to_depth(n, p):
    items = list(np.random.default_rng(n).permutation(n))
    assert rbo(items, items, p, variant="trunc") == pytest.approx(1 - p**n, abs=1e-12)
    assert rbo(items, items, p, variant="trunc", depth=1) == pytest.approx(1 - p, abs=1e-15)


@pytest.mark.parametrize("n", [1, 7, 300])
def test_identical_lists_ext_and_max_are_one(n):
    items = list(range(n))
    assert rbo(items, items, 0.9) == pytest.approx(1.0, abs=1e-12)
    assert rbo(items, items, 0.9, variant="max") == pytest.approx(1.0, abs=1e-12)
    assert average_overlap(items, items) == pytest.approx(1.0, abs=1e-15)
    # the lower bound of identical seen prefixes: all agreement 1 up to n, X_n/d beyond (eq. 11)
    p = 0.9
    tail = sum(p**d / d for d in range(n + 1, 2000))
    expected = (1 - p) / p * (sum(p**d for d in range(1, n + 1)) + n * tail)
    assert rbo(items, items, p, variant="min") == pytest.approx(expected, abs=1e-12)


def test_disjoint_lists():
    a, b = list("abcde"), list("vwxyz")
    for variant in ("ext", "min", "trunc"):
        assert rbo(a, b, 0.8, variant=variant) == 0.0
    assert average_overlap(a, b) == 0.0
    # max: both lists continue with the other's items, f = 10, then agree for ever
    p = 0.8
    expected = (1 - p) / p * sum((2 * d - 10) / d * p**d for d in range(6, 11)) + p**10
    assert rbo(a, b, p, variant="max") == pytest.approx(expected, abs=1e-14)


def test_uneven_lengths_ext_differs_from_truncating_to_the_shorter_list():
    # eq. 32 extrapolates S's agreement past its end; cutting L to |S| is a different quantity
    short, long = list("abc"), list("abxcyzw")
    assert rbo(short, long, 0.9) != pytest.approx(rbo(short, long[:3], 0.9))
    assert rbo(short, long, 0.9, depth=3) == rbo(short, long[:3], 0.9)


# --- independent references -------------------------------------------------------------------------


@SETTINGS
@given(rankings, rankings, st.floats(0.2, 0.7))
def test_min_is_rbo_of_lists_padded_with_never_matching_items(a, b, p):
    depth = 400  # p^400 < 1e-60
    pa = a + [("a-pad", i) for i in range(depth)]
    pb = b + [("b-pad", i) for i in range(depth)]
    assert rbo(a, b, p, variant="min") == pytest.approx(naive_weighted_sum(pa, pb, p, depth), abs=1e-12)


@SETTINGS
@given(rankings, rankings, st.floats(0.2, 0.7))
def test_max_is_rbo_of_the_most_favourable_continuations(a, b, p):
    s_, l_ = (a, b) if len(a) <= len(b) else (b, a)
    s_ext = s_ + [i for i in l_ if i not in s_]
    l_ext = l_ + [i for i in s_ if i not in l_]
    assert len(s_ext) == len(l_ext)
    depth = 400
    tail = [("shared", i) for i in range(depth)]
    expected = naive_weighted_sum(s_ext + tail, l_ext + tail, p, depth)
    assert rbo(a, b, p, variant="max") == pytest.approx(expected, abs=1e-12)


def test_ext_matches_rbo_package_rbo_ext():
    rbo_pkg = pytest.importorskip("rbo")
    rng = np.random.default_rng(20240521)
    for trial in range(200):
        n = int(rng.integers(1, 60))
        la, lb = int(rng.integers(1, n + 1)), int(rng.integers(1, n + 1))
        if trial % 2 == 0:
            lb = la  # same length
        a = [int(i) for i in rng.permutation(n)[:la]]
        b = [int(i) for i in rng.permutation(n)[:lb]]
        p = float(rng.uniform(0.05, 0.98))
        ref = rbo_pkg.RankingSimilarity(a, b).rbo_ext(p=p)
        assert rbo(a, b, p) == pytest.approx(ref, abs=1e-12), (a, b, p)


def test_full_catalogue_ext_matches_rbo_package():
    rbo_pkg = pytest.importorskip("rbo")
    rng = np.random.default_rng(7)
    a, b = rng.permutation(1000), rng.permutation(1000)
    ref = rbo_pkg.RankingSimilarity(a.tolist(), b.tolist()).rbo_ext(p=0.9)
    assert rbo(a.tolist(), b.tolist(), 0.9) == pytest.approx(ref, abs=1e-12)
    assert rbo_batch(a[None], b[None], 0.9)[0] == pytest.approx(ref, abs=1e-12)


def test_average_overlap_matches_rbo_package_p_equal_one():
    rbo_pkg = pytest.importorskip("rbo")
    rng = np.random.default_rng(3)
    for _ in range(50):
        a, b = rng.permutation(40)[:20].tolist(), rng.permutation(40)[:20].tolist()
        ref = rbo_pkg.RankingSimilarity(a, b).rbo(p=1.0)
        assert average_overlap(a, b) == pytest.approx(ref, abs=1e-12)


# --- properties -----------------------------------------------------------------------------------


@SETTINGS
@given(rankings, rankings, ps)
def test_symmetry_bounds_and_order(a, b, p):
    vals = {}
    for variant in VARIANTS:
        v = rbo(a, b, p, variant=variant)
        assert v == rbo(b, a, p, variant=variant)
        assert -1e-12 <= v <= 1 + 1e-12
        vals[variant] = v
    assert vals["min"] <= vals["ext"] + 1e-12
    assert vals["ext"] <= vals["max"] + 1e-12
    depth = min(len(a), len(b))
    trunc = rbo(a, b, p, variant="trunc")
    assert trunc == rbo(b, a, p, variant="trunc")
    assert 0.0 <= trunc <= 1 - p**depth + 1e-12
    assert trunc == pytest.approx(naive_weighted_sum(a, b, p, depth), abs=1e-12)
    ao = average_overlap(a, b)
    assert ao == average_overlap(b, a)
    assert ao == pytest.approx(sum(naive_overlaps(a, b, depth)[d - 1] / d for d in range(1, depth + 1)) / depth)


@SETTINGS
@given(rankings, ps)
def test_identical_and_disjoint(a, p):
    # eq. 32: a list that is a prefix of the other has agreement 1 at every depth -> exactly 1
    assert rbo(a, a, p) == 1.0
    assert rbo(a, a, p, variant="max") == 1.0
    assert rbo(a[: max(1, len(a) // 2)], a, p) == 1.0
    assert rbo(a, a + [1000, 1001], p, variant="max") == 1.0
    assert rbo(a, a, p, variant="trunc") == pytest.approx(1 - p ** len(a), abs=1e-12)
    assert average_overlap(a, a) == pytest.approx(1.0, abs=1e-15)
    other = [i + 1000 for i in a]
    for variant in ("ext", "min", "trunc"):
        assert rbo(a, other, p, variant=variant) == 0.0


@SETTINGS
@given(rankings, rankings, ps, st.randoms(use_true_random=False))
def test_relabelling_items_changes_nothing(a, b, p, rnd):
    universe = sorted(set(a) | set(b))
    names = rnd.sample(range(10**6), len(universe))
    relabel = {item: f"item-{names[i]}" for i, item in enumerate(universe)}
    ra, rb = [relabel[i] for i in a], [relabel[i] for i in b]
    for variant in (*VARIANTS, "trunc"):
        assert rbo(ra, rb, p, variant=variant) == rbo(a, b, p, variant=variant)


@SETTINGS
@given(st.data())
def test_batch_equals_scalar_bitwise(data):
    n = data.draw(st.integers(1, 12))
    wa = data.draw(st.integers(1, 15))
    wb = data.draw(st.integers(1, 15))
    p = data.draw(ps)
    n_items = 30
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    a = np.stack([rng.permutation(n_items)[:wa] for _ in range(n)]).astype(np.int32)
    b = np.stack([rng.permutation(n_items)[:wb] for _ in range(n)]).astype(np.int32)
    for variant in VARIANTS:
        got = rbo_batch(a, b, p, variant=variant)
        assert got.dtype == np.float64 and got.shape == (n,)
        want = [rbo(a[i].tolist(), b[i].tolist(), p, variant=variant) for i in range(n)]
        assert got.tolist() == want
        assert rbo_batch(a.astype(np.int64), b.astype(np.int64), p, variant=variant).tolist() == want
    depth = min(wa, wb)
    want = [rbo(a[i].tolist(), b[i].tolist(), p, variant="trunc") for i in range(n)]
    assert rbo_batch(a, b, p, variant="trunc").tolist() == want
    want = [average_overlap(a[i].tolist(), b[i].tolist(), depth) for i in range(n)]
    assert average_overlap_batch(a, b, depth).tolist() == want


def test_depth_cuts_both_lists():
    rng = np.random.default_rng(1)
    a, b = rng.permutation(50), rng.permutation(50)
    for variant in VARIANTS:
        assert rbo(a.tolist(), b.tolist(), 0.9, variant=variant, depth=10) == rbo(
            a[:10].tolist(), b[:10].tolist(), 0.9, variant=variant
        )
        assert rbo_batch(a[None], b[None], 0.9, variant=variant, depth=10)[0] == rbo(
            a[:10].tolist(), b[:10].tolist(), 0.9, variant=variant
        )
    assert rbo(a.tolist(), b.tolist(), 0.9, variant="trunc", depth=10) == pytest.approx(
        naive_weighted_sum(a.tolist(), b.tolist(), 0.9, 10), abs=1e-14
    )


def test_batch_is_deterministic_across_thread_counts():
    import numba

    rng = np.random.default_rng(5)
    # large enough for the parallel path (small inputs run serially)
    a = rng.permuted(np.tile(np.arange(300, dtype=np.int32), (1000, 1)), axis=1)
    b = rng.permuted(np.tile(np.arange(300, dtype=np.int32), (1000, 1)), axis=1)
    first = rbo_batch(a, b)
    for i in (0, 1, 517, 999):
        assert first[i] == rbo(a[i].tolist(), b[i].tolist())
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        single = rbo_batch(a, b)
    finally:
        numba.set_num_threads(before)
    assert first.tobytes() == single.tobytes() == rbo_batch(a, b).tobytes()


def test_accepts_ranklists():
    from recaudit.data import RankLists

    a = RankLists(np.array([[0, 1, 2], [2, 1, 0]]))
    b = RankLists(np.array([[0, 1, 2], [0, 1, 2]]))
    assert rbo_batch(a, b).tolist() == rbo_batch(a.items, b.items).tolist()


# --- ties (Corsi & Urbano, SIGIR 2024) ------------------------------------------------------------

TIED_X = ["red", {"blue", "green"}, "yellow", "pink"]
TIED_Y = [{"blue", "red"}, "white", {"yellow", "black", "purple"}, "green"]


@pytest.mark.parametrize(
    ("ties", "expected"),
    [
        # values published with the authors' implementation (julian-urbano/sigir2024-rbo README)
        ("w", {"ext": 0.7068257, "min": 0.3429684, "max": 0.9049857}),
        ("a", {"ext": 0.6922853, "min": 0.3310519, "max": 0.8930692}),
    ],
)
def test_ties_published_example(ties, expected):
    for variant, value in expected.items():
        assert rbo(TIED_X, TIED_Y, 0.95, variant=variant, ties=ties) == pytest.approx(value, abs=5e-8)
        assert rbo(TIED_Y, TIED_X, 0.95, variant=variant, ties=ties) == pytest.approx(value, abs=5e-8)


tied_rankings = st.lists(
    st.lists(st.integers(0, 12), min_size=1, max_size=3), min_size=1, max_size=5
).map(lambda groups: _dedupe_groups(groups)).filter(bool)


def _dedupe_groups(groups):
    seen, out = set(), []
    for g in groups:
        g = [i for i in dict.fromkeys(g) if i not in seen]
        seen.update(g)
        if g:
            out.append(g[0] if len(g) == 1 else frozenset(g))
    return out


def _n_breakings(ranking):
    return math.prod(math.factorial(len(g)) for g in ranking if isinstance(g, frozenset))


def _tie_breakings(ranking):
    options = [itertools.permutations(sorted(g)) if isinstance(g, frozenset) else [(g,)] for g in ranking]
    for combo in itertools.product(*[list(o) for o in options]):
        yield [i for part in combo for i in part]


@st.composite
def tied_ranking_of(draw, n):
    items = draw(st.lists(st.integers(0, 9), unique=True, min_size=n, max_size=n))
    cuts = draw(st.lists(st.booleans(), min_size=n - 1, max_size=n - 1))
    groups, current = [], [items[0]]
    for item, cut in zip(items[1:], cuts):
        if cut:
            groups.append(current)
            current = []
        current.append(item)
    groups.append(current)
    return [g[0] if len(g) == 1 else frozenset(g) for g in groups]


@settings(max_examples=60, deadline=None)
@given(st.data(), st.floats(0.3, 0.95))
def test_ties_a_is_the_expected_rbo_over_random_tie_breaking(data, p):
    # Corsi & Urbano's RBO^a is the expected RBO when ties are broken at random. This holds
    # exactly when both rankings hold the same number of items; past the shorter list the
    # extrapolation and bounds use mean contributions, which are not permutation averages.
    n = data.draw(st.integers(1, 6))
    x, y = data.draw(tied_ranking_of(n)), data.draw(tied_ranking_of(n))
    assume(_n_breakings(x) * _n_breakings(y) <= 600)
    for variant in VARIANTS:
        values = [rbo(a, b, p, variant=variant) for a in _tie_breakings(x) for b in _tie_breakings(y)]
        assert rbo(x, y, p, variant=variant, ties="a") == pytest.approx(np.mean(values), abs=1e-12)


@settings(max_examples=80, deadline=None)
@given(tied_rankings, tied_rankings, st.floats(0.3, 0.95))
def test_ties_bounds_order_and_identity(x, y, p):
    for ties in ("w", "a"):
        lo, ext, hi = (rbo(x, y, p, variant=v, ties=ties) for v in ("min", "ext", "max"))
        assert -1e-12 <= lo <= ext + 1e-12 and ext <= hi + 1e-12 and hi <= 1 + 1e-12
    # w: tied items share a rank, so a tied ranking is identical to itself
    assert rbo(x, x, p, ties="w") == pytest.approx(1.0, abs=1e-12)


@SETTINGS
@given(rankings, rankings, ps)
def test_ties_without_ties_is_untied_rbo(a, b, p):
    for variant in VARIANTS:
        for ties in ("w", "a"):
            assert rbo(a, b, p, variant=variant, ties=ties) == pytest.approx(rbo(a, b, p, variant=variant), abs=1e-12)


def test_ties_are_opt_in():
    # without ties=..., a frozenset is an ordinary (hashable) item
    assert rbo([frozenset({1, 2}), 3], [frozenset({1, 2}), 3]) == pytest.approx(1.0)
    assert rbo([frozenset({1, 2}), 3], [1, 2, 3]) == pytest.approx(rbo(["x", 3], [1, 2, 3]))


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.0, 1.0, -0.5, 1.5, float("nan")])
def test_p_out_of_range(p):
    with pytest.raises(ValueError, match="p"):
        rbo("abc", "abc", p)
    with pytest.raises(ValueError, match="p"):
        rbo_batch(np.zeros((1, 1), int), np.zeros((1, 1), int), p)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="twice"):
        rbo("abca", "abc")
    with pytest.raises(ValueError, match="empty"):
        rbo([], "abc")
    with pytest.raises(ValueError, match="variant"):
        rbo("abc", "abc", variant="extrapolated")
    with pytest.raises(ValueError, match="depth"):
        rbo("abc", "abcd", variant="trunc", depth=4)
    with pytest.raises(ValueError, match="depth"):
        average_overlap("abc", "abcd", depth=0)
    with pytest.raises(ValueError, match="depth cannot be combined"):
        rbo(TIED_X, TIED_Y, ties="w", depth=2)
    with pytest.raises(ValueError, match="ties"):
        rbo(TIED_X, TIED_Y, ties="b")
    with pytest.raises(ValueError, match="ties are supported"):
        rbo(TIED_X, TIED_Y, variant="trunc", ties="w")
    with pytest.raises(ValueError, match="twice"):
        rbo(["a", {"a", "b"}], ["a"], ties="w")


def test_invalid_batches():
    good = np.array([[0, 1, 2], [1, 2, 0]])
    with pytest.raises(ValueError, match="rows"):
        rbo_batch(good, good[:1])
    with pytest.raises(ValueError, match="row 1.*b lists an item twice"):
        rbo_batch(good, np.array([[0, 1, 2], [1, 1, 0]]))
    with pytest.raises(ValueError, match="row 0.*a lists an item twice"):
        rbo_batch(np.array([[0, 0, 2], [1, 2, 0]]), good, variant="min")
    with pytest.raises(ValueError, match="negative"):
        rbo_batch(np.array([[0, -1, 2], [1, 2, 0]]), good)
    with pytest.raises(ValueError, match="2-D"):
        rbo_batch(good[0], good[0])
    with pytest.raises(TypeError, match="integer"):
        rbo_batch(good.astype(float), good)


# --- early exit and marker growth in the batch kernel ---------------------------------------------


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9, 0.98])
def test_early_exit_is_bit_identical_to_a_full_scan(p):
    rng = np.random.default_rng(int(p * 100))
    n_items = 3000
    a = rng.permuted(np.tile(np.arange(n_items, dtype=np.int32), (60, 1)), axis=1)
    b = rng.permuted(np.tile(np.arange(n_items, dtype=np.int32), (60, 1)), axis=1)
    b[:20] = a[:20]  # identical rows
    b[20:40, :50] = a[20:40, :50]  # shared head, random tail
    for i in range(20, 40):
        b[i, 50:] = rng.permutation(np.setdiff1d(np.arange(n_items), a[i, :50]))
    for variant in (*VARIANTS, "trunc"):
        for bb in (b, b[:, :1000]):  # same and different lengths
            fast = rbo_batch(a, bb, p, variant=variant)
            full = rbo_batch(a, bb, p, variant=variant, full_scan=True)
            assert fast.tobytes() == full.tobytes(), variant


def test_full_scan_checks_every_position():
    a = np.arange(2000, dtype=np.int32)[None, :].copy()
    fixed = a.copy()
    fixed[0, :2] = [1, 0]  # not identical, so the scan may stop early
    b = fixed.copy()
    b[0, -1] = b[0, -2]  # a duplicate far below where p = 0.5 stops contributing
    with pytest.raises(ValueError, match="b lists an item twice"):
        rbo_batch(a, b, 0.5, full_scan=True)
    with pytest.raises(ValueError, match="twice"):
        rbo(a[0].tolist(), b[0].tolist(), 0.5)  # scalar forms always check the whole list
    # documented: the default scan checks only the prefix it reads
    assert rbo_batch(a, b, 0.5)[0] == rbo_batch(a, fixed, 0.5, full_scan=True)[0]


def test_sparse_large_codes_grow_the_markers():
    rng = np.random.default_rng(9)
    a = rng.choice(10**6, size=(30, 8), replace=False).astype(np.int64)
    b = np.concatenate([a[:, :4], rng.choice(10**6, size=(30, 4), replace=False)], axis=1)
    got = rbo_batch(a, b, 0.8)
    assert got.tolist() == [rbo(x, y, 0.8) for x, y in zip(a.tolist(), b.tolist())]
    with pytest.raises(ValueError, match="dense codes"):
        rbo_batch(np.array([[1, 2**40]]), np.array([[1, 2]]))
