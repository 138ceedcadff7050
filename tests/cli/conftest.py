"""What the command-line tests share: a tiny audit config (synthetic data, a tiny GRU4Rec)."""

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
