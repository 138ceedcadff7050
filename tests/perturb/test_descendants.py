"""`casper_descendants`: what an edit reaches in the interaction graph."""

import numpy as np
import pytest

from recaudit.perturb import casper_descendants, casper_scores

from .conftest import random_log


def test_hand_worked_graph(small_log):
    # edges: user 0: 0->2->4, user 1: 1->5, user 2: 3->6; item 0: 0->5, item 1: 1->2,
    # item 2: 3->4
    reach = lambda rows, **kw: set(np.flatnonzero(casper_descendants(small_log, rows, **kw)))  # noqa: E731
    assert reach([0]) == {0, 2, 4, 5}
    assert reach([1]) == {1, 2, 4, 5}
    assert reach([3]) == {3, 4, 6}
    assert reach([0, 3]) == {0, 2, 3, 4, 5, 6}
    assert reach([6]) == {6}
    assert reach([]) == set()
    # with max_len = 1 only each user's last row is a node: no edge from row 0
    assert reach([0], max_len=1) == {0}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_len", [None, 3])
def test_a_roots_descendants_are_its_casper_score(seed, max_len):
    log = random_log(np.random.default_rng(seed), 300, 20, 15, 120)
    scores = casper_scores(log, max_len, method="exact")
    for root in np.flatnonzero(scores)[:25]:
        assert casper_descendants(log, [root], max_len).sum() == scores[root]


def test_rows_outside_the_log_are_refused(small_log):
    with pytest.raises(ValueError, match=r"rows must be in \[0, 7\)"):
        casper_descendants(small_log, [7])
