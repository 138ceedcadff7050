"""Command models: a real tiny program (fake_command_model.py) trained and queried through
command templates, every error case through a real misbehaving command."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import numpy as np
import pytest

from recaudit.data import Interactions
from recaudit.errors import ConfigError
from recaudit.models import CommandError, CommandModel, create
from recaudit.models._scratch import scratch_dir
from recaudit.models.testing import RecommenderConformance, leave_last_out, planted_log

SCRIPT = Path(__file__).with_name("fake_command_model.py")
PY = shlex.quote(sys.executable)
TRAIN = f"{PY} {shlex.quote(str(SCRIPT))} train {{train}} {{seed}} {{model_dir}} {{params}}"
RANK = f"{PY} {shlex.quote(str(SCRIPT))} rank {{model_dir}} {{queries}} {{k}} {{output}}"


def model(train_mode: str = "", rank_mode: str = "", **kw) -> CommandModel:
    return create("command", train=f"{TRAIN} {train_mode}".strip(),
                  rank=f"{RANK} {rank_mode}".strip(), **kw)


def small_log() -> Interactions:
    """planted_log with string ids (checks that original ids travel both ways)."""
    log = planted_log(n_users=12, n_items=15, length=8)
    return log.replace(item_ids=np.array([f"i{j:02d}" for j in range(log.n_items)]),
                       user_ids=np.array([f"u{j}" for j in range(log.n_users)]))


class TestCommandModelConformance(RecommenderConformance):
    def make_model(self):
        return model()

    def make_log(self):
        return small_log()


def test_lists_match_the_programs_own_ranking_and_ids_map_back():
    train, queries = leave_last_out(small_log())
    m = model().fit(train, seed=3)
    top = m.rank(queries, k=4)
    assert top.items.shape == (len(queries), 4) and top.scores is not None
    # the same program's score-only output ranks identically (ties by catalogue order)
    by_score = model(rank_mode="scores").fit(train, seed=3).rank(queries, k=4)
    assert np.array_equal(by_score.items, top.items)
    ranks_only = model(rank_mode="ranks").fit(train, seed=3).rank(queries, k=4)
    assert np.array_equal(ranks_only.items, top.items) and ranks_only.scores is None
    # item ids are original ids: re-derive query 0's list from the model file by hand
    data = np.load(m._workspace / "model" / "model.npz", allow_pickle=True)
    items, pop, trans = data["items"], data["pop"], data["trans"]
    last = train.item_ids[queries.context(0)[-1]]
    s = pop + 10.0 * trans[list(items).index(last)]
    expect = items[np.lexsort((np.arange(len(items)), -s))[:4]]
    assert list(train.item_ids[top.items[0]]) == list(expect)


def test_params_reach_the_program_and_round_trip():
    train, queries = leave_last_out(small_log())
    quiet = model(noise=0.0)
    assert quiet.config.params == {"noise": 0.0}
    a = quiet.fit(train, seed=0).rank(queries)
    b = model(noise=0.0).fit(train, seed=1).rank(queries)
    assert a.equals(b)  # no noise: the seed no longer matters
    again = CommandModel(**quiet.get_params())
    assert again.config == quiet.config


def test_temporary_files_live_in_the_scratch_dir_and_are_removed(tmp_path):
    train, queries = leave_last_out(small_log())
    with scratch_dir(tmp_path):
        m = model().fit(train, seed=0)
    ws = m._workspace
    assert ws.parent == tmp_path
    assert sorted(p.name for p in ws.iterdir()) == ["model"]  # train/params files gone
    m.rank(queries, k=2)
    assert sorted(p.name for p in ws.iterdir()) == ["model"]  # queries/output gone
    m.close()
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(RuntimeError, match="not fitted"):
        m.rank(queries)


def test_a_pickled_fitted_model_carries_its_files_and_outlives_the_original(tmp_path):
    import pickle

    train, queries = leave_last_out(small_log())
    with scratch_dir(tmp_path):
        m = model().fit(train, seed=0)
        copy = pickle.loads(pickle.dumps(m))
    assert copy._workspace != m._workspace and copy._workspace.parent == tmp_path
    expected = m.rank(queries, k=3)
    m.close()  # the original's files are gone; the copy has its own
    assert copy.rank(queries, k=3).equals(expected)
    copy.close()
    assert list(tmp_path.iterdir()) == []
    unfitted = pickle.loads(pickle.dumps(model()))
    assert unfitted._workspace is None and unfitted.config == model().config


def test_extra_keywords_are_the_programs_params_also_from_plain_data():
    from recaudit.experiment import ModelSpec

    spec = ModelSpec.from_dict({"name": "command", "params": {"train": TRAIN, "rank": RANK,
                                                              "noise": 0.5}})
    m = create(spec.name, **spec.params)
    assert m.config.params == {"noise": 0.5}
    assert m.get_params()["train"] == shlex.split(TRAIN)
    with pytest.raises(ConfigError, match="params.*missing required key 'rank'"):
        ModelSpec.from_dict({"name": "command", "params": {"train": TRAIN}})


def test_workdir_option_and_cleanup_after_a_failing_command(tmp_path):
    train, queries = leave_last_out(small_log())
    m = model(rank_mode="crash", workdir=str(tmp_path)).fit(train, seed=0)
    with pytest.raises(CommandError):
        m.rank(queries)
    m.close()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("template, message", [
    ("python train.py {train} {sed}", r"unknown placeholder \{sed\}. Did you mean 'seed'"),
    ("python 'train.py {train}", "cannot be split"),
    ("python train.py", r"never uses \{train\}"),
    ("", "is empty"),
])
def test_bad_templates_are_config_errors(template, message):
    with pytest.raises(ConfigError, match=message):
        create("command", train=template, rank=RANK)


def test_rank_template_needs_output_and_other_options_are_checked(tmp_path):
    with pytest.raises(ConfigError, match=r"never uses \{output\}"):
        create("command", train=TRAIN, rank="rank {queries}")
    with pytest.raises(ConfigError, match="timeout"):
        model(timeout=0)
    with pytest.raises(ConfigError, match="cwd"):
        model(cwd=str(tmp_path / "nope"))
    with pytest.raises(ConfigError, match="missing required key .rank."):
        create("command", train=TRAIN)


def test_list_templates_keep_spaces_without_a_shell(tmp_path):
    spaced = tmp_path / "my scripts"
    spaced.mkdir()
    script = spaced / "model prog.py"
    script.write_text(SCRIPT.read_text())
    train, queries = leave_last_out(small_log())
    m = create("command",
               train=[sys.executable, str(script), "train", "{train}", "{seed}", "{model_dir}",
                      "{params}"],
               rank=[sys.executable, str(script), "rank", "{model_dir}", "{queries}", "{k}",
                     "{output}"])
    ref = model().fit(train, seed=0).rank(queries, k=3)
    assert m.fit(train, seed=0).rank(queries, k=3).equals(ref)
    # shell syntax is an argument like any other: nothing is interpreted
    echo = create("command", train=f"{TRAIN} ; touch {tmp_path}/pwned", rank=RANK)
    with pytest.raises(CommandError):
        echo.fit(train, seed=0)  # the script rejects the extra arguments
    assert not (tmp_path / "pwned").exists()


def test_non_zero_exit_names_the_command_and_shows_stderr():
    train, _ = leave_last_out(small_log())
    with pytest.raises(CommandError) as err:
        model(train_mode="fail").fit(train, seed=0)
    text = str(err.value)
    assert "train command" in text and "exit code 3" in text and "fake_command_model.py" in text
    assert "out of memory (on purpose)" in text and "train.parquet" in text


def test_timeout_kills_the_command():
    train, _ = leave_last_out(small_log())
    with pytest.raises(CommandError, match=r"timed out after 1 s"):
        model(train_mode="sleep", timeout=1).fit(train, seed=0)


def test_missing_program():
    train, _ = leave_last_out(small_log())
    m = create("command", train="/no/such/program {train}", rank=RANK)
    with pytest.raises(CommandError, match="(?s)cannot start.*'/no/such/program' exists"):
        m.fit(train, seed=0)


@pytest.mark.parametrize("mode, message", [
    ("crash", r"rank command .* failed with exit code 1.*cannot rank \(on purpose\)"),
    ("nothing", r"output file .*output.parquet: the command exited 0 but wrote no output"),
    ("garbage", r"output.parquet: not a readable Parquet file"),
    ("unknown-item", r"data row 4 \(query 0\) names item 'nobody-knows-me', which is not in the "
                     r"training catalogue"),
    ("dup-rank", r"query 0 has rank 1 twice \(data row 1 and data row 2\)"),
    ("dup-item", r"query 0 lists item .i\d\d. twice \(data row 1 and data row 2\)"),
    ("missing-query", r"no rows for 1 of the \d+ queries \(2\)"),
    ("extra-query", r"data row 1 answers query 999, which was not asked"),
    ("no-item-column", r"expected \(query, rank, item\) or \(query, item, score\)"),
])
def test_bad_outputs_are_clear_errors(mode, message):
    train, queries = leave_last_out(small_log())
    m = model(rank_mode=mode).fit(train, seed=0)
    with pytest.raises(CommandError, match="(?s)" + message) as err:
        m.rank(queries, k=5)
    assert "rank command" in str(err.value)


def test_integer_ids_and_full_catalogue_depth():
    train, queries = leave_last_out(planted_log(n_users=10, n_items=12, length=8))
    full = model().fit(train, seed=0).rank(queries)
    seen = len(np.unique(train.item))
    assert full.depth == seen  # the program ranks the items it has seen, all of them


def test_audit_config_in_toml_runs_a_command_model_and_leaves_no_files(tmp_path):
    from recaudit.audit import load_config, run_audit, trial_summary

    script = shlex.quote(str(SCRIPT))
    train = f"{sys.executable} {script} train {{train}} {{seed}} {{model_dir}} {{params}}"
    rank = f"{sys.executable} {script} rank {{model_dir}} {{queries}} {{k}} {{output}}"
    (tmp_path / "audit.toml").write_text(f'''
name = "cmd"
output = "{tmp_path / 'store' / 'cmd.duckdb'}"
seeds = [0]
perturbations = ["random-delete", "seed-only"]

[[datasets]]
name = "synthetic"
options = {{ n_users = 25, n_items = 30, mean_length = 12.0, max_length = 30 }}

[[models]]
name = "command"
[models.params]
train = "{train}"
rank = "{rank}"
noise = 0.25
timeout = 120
env = {{ FAKE_MODEL_LOG = "{tmp_path / 'dirs.txt'}" }}
''')
    cfg = load_config(tmp_path / "audit.toml")
    assert cfg.models[0].params["noise"] == 0.25
    store = run_audit(cfg)
    summary = trial_summary(store)
    assert len(summary) == 2 and (summary["model"] == "command").all()
    rbo = dict(zip(summary["perturbation"], summary["rbo"]))
    assert 0 < rbo["seed-only"] < 1 and 0 < rbo["random-delete"] <= 1
    used = [Path(p) for p in (tmp_path / "dirs.txt").read_text().split()]
    assert len(used) == 3  # baseline, random-delete, seed-only
    assert all(p.parent.parent == tmp_path / "store" for p in used)  # <store dir>/<ws>/model
    left = [p.name for p in (tmp_path / "store").iterdir()]
    assert not [n for n in left if n.startswith("recaudit-command-")], left
