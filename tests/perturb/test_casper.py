"""CASPER scores against an independent brute-force BFS and hand-worked graphs."""

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.perturb import casper_error_bound, casper_scores, select_casper

from .conftest import random_log


def brute_force(user, item, ts, max_len=None):
    """Plain-Python Algorithm 1 with the issue's graph definition (no shared code)."""
    n = len(user)
    order = sorted(range(n), key=lambda r: (ts[r], r))  # stable time order
    seq = {}
    for r in order:
        seq.setdefault(user[r], []).append(r)
    nodes = set()
    for rows in seq.values():
        nodes.update(rows if max_len is None else rows[-max_len:])
    edges = {r: [] for r in nodes}
    indeg = dict.fromkeys(nodes, 0)
    chains = {}
    for r in order:
        if r in nodes:
            chains.setdefault(("u", user[r]), []).append(r)
            chains.setdefault(("i", item[r]), []).append(r)
    for chain in chains.values():
        for a, b in zip(chain, chain[1:]):
            if ts[b] > ts[a]:
                edges[a].append(b)
                indeg[b] += 1
    score = [0] * n
    for r in nodes:
        if indeg[r] == 0:
            seen, queue = {r}, [r]
            while queue:
                x = queue.pop()
                for c in edges[x]:
                    if c not in seen:
                        seen.add(c)
                        queue.append(c)
            score[r] = len(seen)
    return score


def test_hand_worked_graph(small_log):
    # edges: user0 0->2->4, user1 1->5, user2 3->6, item1 1->2, item2 3->4, item0 0->5.
    # roots (in-degree 0): 0, 1, 3. desc(0) = {0,2,4,5}; desc(1) = {1,2,4,5}; desc(3) = {3,4,6}
    assert casper_scores(small_log).tolist() == [4, 4, 0, 3, 0, 0, 0]


def test_equal_timestamps_give_no_edge_and_are_not_jumped():
    # one user, times 1, 1, 2: only the second -> third edge exists; both first rows are roots
    log = Interactions.from_codes([0, 0, 0], [0, 1, 2], [1, 1, 2])
    assert casper_scores(log).tolist() == [1, 2, 0]


def test_window_keeps_latest_interactions_only(small_log):
    # max_len=1: nodes are each user's last row (4, 5, 6); items 2,0,3 differ: no edges
    assert casper_scores(small_log, 1).tolist() == [0, 0, 0, 0, 1, 1, 1]
    # max_len=2: nodes 2,4 (user0), 1,5 (user1), 3,6 (user2); edges 2->4, 1->5, 1->2 (item1),
    # 3->4 (item2); roots 1, 3: desc(1) = {1,5,2,4}, desc(3) = {3,4,6}
    assert casper_scores(small_log, 2).tolist() == [0, 4, 0, 3, 0, 0, 0]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("max_len", [None, 1, 2, 5])
def test_matches_brute_force_on_random_logs(seed, max_len):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    log = random_log(rng, n, int(rng.integers(1, 20)), int(rng.integers(1, 15)),
                     int(rng.integers(1, 60)))  # few distinct times: many ties
    expected = brute_force(log.user.tolist(), log.item.tolist(), log.timestamp.tolist(), max_len)
    for threads in (1, 2):
        got = casper_scores(log, max_len, method="exact", n_threads=threads)
        assert got.dtype == np.int64
        assert got.tolist() == expected


def test_more_than_64_roots_and_float_times():
    rng = np.random.default_rng(5)
    n = 3000
    log = Interactions.from_codes(rng.integers(0, 400, n), rng.integers(0, 300, n),
                                  rng.random(n).round(2))
    expected = brute_force(log.user.tolist(), log.item.tolist(), log.timestamp.tolist(), 3)
    got = casper_scores(log, 3, method="exact")
    assert sum(1 for s in expected if s) > 64
    assert got.tolist() == expected


def test_approx_within_stated_error():
    rng = np.random.default_rng(1)
    log = random_log(rng, 5000, 200, 100, 3000)
    exact = casper_scores(log, method="exact")
    approx = casper_scores(log, method="approx", k=400, seed=3)
    roots = exact > 0
    assert np.array_equal(approx > 0, roots)
    rel = approx[roots] / exact[roots] - 1
    # relative std is 1/sqrt(k-2) = 5 %; by the union bound all roots are within 25 % except
    # with probability roots * casper_error_bound(400, 0.25) < 1 %
    assert roots.sum() * casper_error_bound(400, 0.25) < 0.01
    assert np.abs(rel).max() < 0.25
    # unbiased: averaged over 10 independent seeds (std of the grand mean about 1.6 %)
    means = [(casper_scores(log, method="approx", k=400, seed=s)[roots] / exact[roots] - 1).mean()
             for s in range(10, 20)]
    assert abs(np.mean(means)) < 0.05
    assert np.array_equal(approx, casper_scores(log, method="approx", k=400, seed=3))


def test_error_bound_matches_simulation():
    rng = np.random.default_rng(0)
    k, s, eps = 30, 50.0, 0.25
    est = (k - 1) / rng.exponential(1 / s, size=(20000, k)).sum(axis=1)
    simulated = np.mean(np.abs(est / s - 1) > eps)
    assert abs(simulated - casper_error_bound(k, eps)) < 0.01


def test_auto_uses_approx_beyond_budget(small_log):
    assert casper_scores(small_log, exact_budget=0, k=1000).tolist() != [0] * 7
    assert np.array_equal(casper_scores(small_log),
                          casper_scores(small_log, method="exact"))


def test_select_casper_ties_go_to_earliest(small_log):
    rows, scores = select_casper(small_log, 2)
    assert rows.tolist() == [0, 1] and scores.tolist() == [4.0, 4.0]
    rows, _ = select_casper(small_log, 3)
    assert rows.tolist() == [0, 1, 3]


def test_bad_arguments(small_log):
    with pytest.raises(ValueError, match="max_len"):
        casper_scores(small_log, 0)
    with pytest.raises(ValueError, match="method"):
        casper_scores(small_log, method="bfs")
    with pytest.raises(TypeError):
        casper_scores(np.zeros(3))
    assert casper_scores(Interactions.from_codes([], [], n_users=1, n_items=1)).tolist() == []


def test_approx_independent_of_threads():
    log = random_log(np.random.default_rng(2), 2000, 50, 40, 500)
    a = casper_scores(log, method="approx", k=64, seed=1, n_threads=1)
    b = casper_scores(log, method="approx", k=64, seed=1, n_threads=2)
    assert np.array_equal(a, b)
