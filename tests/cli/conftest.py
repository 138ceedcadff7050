"""What the command-line tests share: a tiny audit config (synthetic data, a tiny GRU4Rec),
and a newcomer's audit run through the command."""

import pytest

#: Format with ``out=`` the store path.
TINY = """
name = "cli"
output = "{out}"
seeds = [0]
perturbations = ["none", "random-delete"]

[[datasets]]
name = "synthetic"
options = {{ n_users = 30, n_items = 20, n_clusters = 3, mean_length = 12, seed = 1 }}

[[models]]
name = "gru4rec"
params = {{ epochs = 1, embedding_dim = 8, hidden_dim = 8 }}

[metrics]
k = 5
"""


@pytest.fixture(scope="session")
def pop_audit(tmp_path_factory):
    """A finished audit through the command, as a newcomer runs one: a model of their own
    (``popmodel:Pop``, labelled ``my pop``) on a tiny file of their own, the default
    perturbations (random-delete and the seed-only floor), two seeds. Returns the folder, the
    store and the completed process (stdout and stderr pipes, not a terminal)."""
    from ._entry import recaudit, tiny_log, with_model

    folder = tmp_path_factory.mktemp("newcomer")
    tiny_log(folder)
    proc = recaudit("audit", "--dataset", "tiny.csv", "--model", with_model(folder),
                    "--label", "my pop", "--seeds", "2", "--k", "5", "-o", "pop.duckdb",
                    cwd=folder)
    assert proc.returncode == 0, proc.stderr
    return folder, folder / "pop.duckdb", proc
