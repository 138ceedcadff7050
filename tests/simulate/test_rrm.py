"""RRM action model and §5.1.1's four-document example (closed forms)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from recaudit import simulate as metrics
from recaudit.simulate import example_documents
from recaudit.simulate.rrm import RRMActionModel, click_probabilities, single_item_preference

D = {1: (0.8, 0.2), 2: (1.0, 0.4), 3: (0.1, 0.8), 4: (0.45, 0.5)}


def _hm(order):
    return [D[i][0] for i in order], [D[i][1] for i in order]


def _regret_choice(order):
    """Independent closed form of the RRM choice probabilities of an examined set."""
    w = {}
    for i in order:
        r = sum(max(D[i][0] - D[j][0], 0) + max(D[i][1] - D[j][1], 0) for j in order if j != i)
        w[i] = math.exp(-r)
    den = math.exp(-1.0) + sum(w.values())
    return {i: w[i] / den for i in order}


def test_single_item_preferences_closed_form():
    phi = {i: single_item_preference(*D[i]) for i in D}
    assert phi[1] == pytest.approx(0.5)  # U = -1 = L
    assert phi[2] == pytest.approx(1 / (1 + math.exp(0.4)))
    assert phi[3] == pytest.approx(1 / (1 + math.exp(-0.1)))
    assert phi[4] == pytest.approx(1 / (1 + math.exp(-0.05)))
    assert max(phi, key=phi.get) == 3  # the favourite is d3
    # M(u, d, {d}) of the action model is the same number
    for i in D:
        assert click_probabilities([D[i][0]], [D[i][1]])[0] == pytest.approx(phi[i])


def test_examination_is_a_proper_probability_over_subsets():
    q = (1.0, 0.8, 0.6)
    order = (1, 2, 3)
    got = click_probabilities(*_hm(order), examination=q)
    want = np.zeros(3)
    for mask in itertools.product((0, 1), repeat=3):
        ex = [o for o, e in zip(order, mask) if e]
        if not ex:
            continue
        weight = np.prod([qk if e else 1 - qk for qk, e in zip(q, mask)])
        choice = ({ex[0]: single_item_preference(*D[ex[0]])} if len(ex) == 1
                  else _regret_choice(ex))
        for pos, o in enumerate(order):
            if o in ex:
                want[pos] += weight * choice[o]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # position 1 always examined: (1-q2)(1-q3) of the mass is the lone-document case
    # and total click probability is a probability
    assert got.sum() <= 1.0


def test_full_and_single_examination_limits():
    h, m = _hm((1, 2, 3))
    full = click_probabilities(h, m, examination=(1, 1, 1))
    ch = _regret_choice((1, 2, 3))
    np.testing.assert_allclose(full, [ch[1], ch[2], ch[3]], rtol=1e-12)
    only_first = click_probabilities(h, m, examination=(1, 0, 0))
    np.testing.assert_allclose(only_first, [0.5, 0, 0], atol=1e-15)


def test_decoy_ranking_beats_unbiased_on_ctr_and_loses_fctr():
    fav = 3
    decoy = (1, 2, 3)
    unbiased = (3, 1, 2)  # by initial preference: phi3 > phi1 > phi2
    phi = [single_item_preference(*D[i]) for i in decoy]
    assert metrics.unbiased_rankings(phi) == [(2, 0, 1)]  # positions of (d3, d1, d2)
    p_dec = click_probabilities(*_hm(decoy))
    p_unb = click_probabilities(*_hm(unbiased))
    ctr_d, ctr_u = metrics.ctr(p_dec), metrics.ctr(p_unb)
    f_d = metrics.fctr(p_dec, [i == fav for i in decoy])
    f_u = metrics.fctr(p_unb, [i == fav for i in unbiased])
    assert ctr_d > ctr_u
    assert f_d < f_u
    ms = metrics.mani_score(ctr_d, f_d, ctr_u, f_u)
    want = math.exp((f_u - f_d) / (f_u + f_d) + (ctr_d - ctr_u) / (ctr_u + ctr_d))
    assert ms == pytest.approx(want)
    assert 1.0 < ms <= math.e ** 2
    assert metrics.mani_score(ctr_u, f_u, ctr_u, f_u) == 1.0


def test_literal_def_4_4_would_call_the_decoy_ranking_unbiased():
    """Why we redefine unbiased rankings: the decoy slate's click probabilities are already
    non-increasing, so the literal Def. 4.4 would give it ManiScore 1."""
    p = click_probabilities(*_hm((1, 2, 3)))
    assert np.all(np.diff(p) <= 0)


def test_action_model_matches_function_on_example_documents():
    docs = example_documents()
    am = RRMActionModel()
    slate = docs.features[[0, 1, 2]]
    np.testing.assert_allclose(am.click_probabilities(np.ones(1), slate),
                               click_probabilities(*_hm((1, 2, 3))))


@pytest.mark.parametrize("kwargs, msg", [
    ({"h": [0.1, 0.2], "m": [0.1]}, "equal length"),
    ({"h": [], "m": []}, "empty"),
    ({"h": [0.1] * 4, "m": [0.1] * 4}, "one probability per slate position"),
    ({"h": [0.1], "m": [0.1], "examination": (1.2,)}, r"\[0, 1\]"),
    ({"h": [np.nan], "m": [0.1]}, "finite"),
])
def test_bad_input_is_rejected(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        click_probabilities(**kwargs)
