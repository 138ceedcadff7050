"""Which argument is a set of relevant items (issue: a tuple was taken as one item)."""

import numpy as np
import pytest

from recaudit.metrics import hit_rate_at_k, mrr, ndcg_at_k, recall_at_k, score_ranks


@pytest.mark.parametrize("relevant", [("b",), ["b"], {"b"}, frozenset({"b"}), np.array(["b"]),
                                      "b", iter(["b"])])
def test_any_non_string_iterable_is_a_set_of_items(relevant):
    assert mrr(["a", "b", "c"], relevant) == 0.5


def test_several_relevant_items_and_item_values():
    assert recall_at_k(["a", "b", "c"], ("c", "x"), 3) == 0.5
    assert hit_rate_at_k([1, 2, 3], (3,), 2) == 0.0
    assert mrr([1, 2, 3], 3) == pytest.approx(1 / 3)
    # a tuple that is itself an item goes inside a set
    assert mrr([("u", 1), ("u", 2)], {("u", 2)}) == 0.5
    assert ndcg_at_k(["a", "b"], ("b", "b"), 2) == pytest.approx(1 / np.log2(3))
    with pytest.raises(TypeError, match="hashable"):
        mrr(["a"], [["a"]])


def test_score_ranks_count_strictly_higher_scores():
    s = np.array([[0.1, 0.9, 0.5, 0.9], [3.0, 2.0, 1.0, 0.0]])
    assert score_ranks(s, [1, 3]).tolist() == [0, 3]  # a tie with a better item still ranks 0
    assert score_ranks(s, [0, 0]).tolist() == [3, 0]
    with pytest.raises(ValueError, match="item codes"):
        score_ranks(s, [4, 0])
