"""Paper presets: resolution, overrides, documentation, and the options they rely on."""

import numpy as np
import pytest
import torch

from recaudit.errors import ConfigError
from recaudit.models import create, model_class
from recaudit.models._presets import PRESETS
from recaudit.models.testing import RecommenderConformance, leave_last_out, planted_log


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_its_model_and_documents_itself(name):
    p = PRESETS[name]
    model = create(name)
    assert type(model) is model_class(p.model) and model_class(name) is model_class(p.model)
    for k, v in p.params.items():
        assert getattr(model.config, k) == v
    assert p.paper.split()[-1].isdigit() and p.differences


def test_parameters_override_a_preset_and_unknown_presets_are_named():
    m = create("lstm@oh2022", epochs=3, hidden_dim=8)
    assert (m.config.epochs, m.config.hidden_dim, m.config.max_len) == (3, 8, 49)
    with pytest.raises(ConfigError, match="lstm@oh2022"):
        create("lstm@oh2021")


TINY_OH = dict(epochs=2, embedding_dim=16, hidden_dim=8, batch_size=32)


class TestLSTMOh2022(RecommenderConformance):
    """CASPER's LSTM layout (left-padded fixed context, first-item samples, frozen random
    embeddings, PyTorch init) passes the whole conformance kit."""

    def make_model(self):
        return create("lstm@oh2022", **TINY_OH)


class TestJODIEOh2022(RecommenderConformance):
    def make_model(self):
        return create("jodie@oh2022", epochs=2, embedding_dim=8, n_spans=20)

    def make_log(self):
        return planted_log(n_users=20, length=12)


def test_frozen_embedding_stays_at_its_torch_initialisation():
    train, _ = leave_last_out(planted_log(n_users=10, length=10))
    m = create("lstm@oh2022", **TINY_OH).fit(train, seed=0)
    again = create("lstm@oh2022", **dict(TINY_OH, epochs=1)).fit(train, seed=0)
    e = m.network_.embedding.weight
    assert not e.requires_grad
    assert torch.equal(e, again.network_.embedding.weight)   # same seed, not trained
    e = e[0]                                                 # a stack of one's only member
    assert torch.all(e[0] == 0) and abs(float(e[1:].std()) - 1.0) < 0.2   # N(0, 1), padding 0
    lstm = m.network_.lstm
    # untrained LSTM parameters start in U(+-1/sqrt(H)); after 2 small epochs still near it
    fresh = create("lstm@oh2022", **dict(TINY_OH, lr=1e-12)).fit(train, seed=0).network_.lstm
    bound = 1 / np.sqrt(8)
    for p in fresh.parameters():
        assert float(p.detach().abs().max()) <= bound + 1e-6
    assert any(not torch.equal(a, b) for a, b in zip(lstm.parameters(), fresh.parameters()))


def test_left_padding_is_read_by_the_encoder():
    """With pad_left the LSTM runs over the padding: a one-item context gives another state
    than the same item alone in a left-aligned batch (biases move the state over zeros)."""
    train, queries = leave_last_out(planted_log(n_users=10, length=10))
    padded = create("lstm@oh2022", **TINY_OH).fit(train, seed=1)
    from recaudit.models.sequential._samples import batch_from_queries

    q = queries.subset(np.arange(3))
    net = padded.network_
    with torch.no_grad():
        left = padded._query_hidden(net, batch_from_queries(q, 49, "cpu", False, pad_left=True))
        plain = padded._query_hidden(net, batch_from_queries(q, 49, "cpu", False))
    assert left.shape == plain.shape and not torch.allclose(left, plain)


def test_jodie_torch_init_follows_the_authors_layers():
    """init='torch': the prediction layer is one Linear over [u, p, one-hot(p), one-hot(u)]
    in JODIE's code, so its four parts share U(+-1/sqrt(fan_in)); RNN cells U(+-1/sqrt(d))."""
    train, _ = leave_last_out(planted_log(n_users=12, length=8, n_items=15))
    d = 8
    net = create("jodie@oh2022", epochs=1, embedding_dim=d, lr=1e-12).fit(train, seed=0).network_
    bound = 1 / np.sqrt(2 * d + train.n_items + train.n_users)
    for part in (net.w_user_dyn.weight, net.w_prev_dyn.weight, net.w_user_static.weight,
                 net.w_prev_static.weight):
        assert float(part.detach().abs().max()) <= bound + 1e-6
        assert float(part.detach().abs().max()) > 0.8 * bound       # uniform over the bound
    assert float(net.user_rnn.weight.detach().abs().max()) <= 1 / np.sqrt(d) + 1e-6
    assert float(net.project.bias.detach().abs().max()) > 0.5      # N(0, 1), not zero
