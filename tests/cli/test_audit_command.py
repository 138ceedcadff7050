"""Issue 40, item 6: what a newcomer's first ``recaudit audit`` says, through the command's
entry (``python -m recaudit`` on a terminal for the progress bar): the noise floor by default,
the test-query count and a warning when it is small, a repeated ``-p`` run once, ``--workers``
and ``--sample-users`` beyond the audit's size said so, progress on stderr only on a terminal,
under the model's ``--label``."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import threading

from recaudit.audit import summary

from ._entry import command, environment, recaudit_here, tiny_log, with_model


def _blocks(out: str) -> tuple[list[str], dict[str, list[str]]]:
    """The first table of an audit's output: its header lines (above the rule) and each
    perturbation's block (its name -> the block's lines: the name's line, then its seeds and
    its queries under it, one per measure)."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("───"))
    blocks: dict[str, list[str]] = {}
    name = None
    for line in lines[rule + 1:]:
        if not line.strip():
            name = None
            continue
        if line.startswith("[ ]"):  # the caption: the table ends
            break
        if name is None:
            name = line.split("  ")[0]
            blocks[name] = []
        blocks[name].append(line)
    return lines[:rule], blocks


def test_the_default_audit_measures_the_noise_floor_and_counts_the_queries(pop_audit):
    folder, store, proc = pop_audit
    header, blocks = _blocks(proc.stdout)
    assert set(blocks) == {"random-delete", "seed-only"}  # seed-only without asking
    assert header[-2].endswith("p vs") and header[-1].split()[-1] == "seed-only"
    frame = summary(store)
    queries = int(frame.queries.iloc[0])
    assert queries == 6  # 3 users x 2 held-out plays each (the first 90 % of 12 trains)
    seeds = int(frame.seeds.iloc[0])
    for lines in blocks.values():  # under each name: its seeds, then its queries
        assert lines[1].startswith(f"{seeds} seeds ")
        assert lines[2].startswith(f"{queries} queries ")
    # the reading says where the floor lies, and that 6 queries are too few
    text = " ".join(proc.stdout.split())
    reading = text[text.index("my pop on "):]
    assert "seed-only floor at RBO" in reading and "only 6 test queries" in reading
    warning = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert any("only 6 test queries" in w and "--min-interactions" in w for w in warning)


def test_an_audit_without_a_floor_says_how_to_get_one(tmp_path):
    tiny_log(tmp_path)
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", with_model(tmp_path),
                    "--seeds", "1", "--k", "5", "-p", "random-delete", "-o", "a.duckdb",
                    cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no noise floor measured (add -p seed-only" in " ".join(proc.stdout.split())


def test_sizes_beyond_the_audit_are_said_and_a_repeated_perturbation_runs_once(tmp_path):
    tiny_log(tmp_path)
    proc = recaudit_here("audit", "--dataset", "tiny.csv", "--model", with_model(tmp_path),
                    "-p", "random-delete", "-p", "random-delete", "-p", "random-delete-k1",
                    "--seeds", "2", "--k", "5", "--workers", "1000", "--sample-users",
                    "100000", "--dry-run", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr  # before: "two planned trials share an id"
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: ")]
    assert sum("repeats -p random-delete: it runs once" in w for w in warnings) == 2
    assert any("--workers 1000: the audit has 2 trials, so 2 workers at most" in w
               for w in warnings)
    assert any("sample_users = 100,000 but the data has 3 users" in w and "all are kept" in w
               for w in warnings)
    assert "with 2 workers" in proc.stdout


def test_no_progress_bar_off_a_terminal(pop_audit):
    _, _, proc = pop_audit
    for stream in (proc.stdout, proc.stderr):
        assert " · random-delete · seed" not in stream and "eta" not in stream


def test_the_progress_bar_goes_to_a_terminal_on_stderr_under_the_label(tmp_path):
    tiny_log(tmp_path)
    model = with_model(tmp_path)
    leader, follower = pty.openpty()
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(leader, 4096)
            except OSError:  # the follower side closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    proc = subprocess.run(command("audit", "--dataset", "tiny.csv", "--model", model,
                                  "--label", "my pop", "--seeds", "1", "--k", "5", "-o",
                                  "bar.duckdb"), cwd=tmp_path, env=environment(),
                          stdout=subprocess.PIPE, stderr=follower, text=True, timeout=600)
    os.close(follower)
    reader.join(timeout=120)  # the terminal's last output, read after the command ended
    os.close(leader)
    terminal = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    assert proc.returncode == 0, terminal
    assert "my pop · " in terminal and "popmodel:Pop" not in terminal
    assert "my pop · " not in proc.stdout and "Rank-list sensitivity" in proc.stdout


def test_a_store_written_with_path_labels_keeps_them_when_resumed(tmp_path):
    import duckdb

    from recaudit.audit import AuditStore

    tiny_log(tmp_path)
    model = with_model(tmp_path)
    args = ("audit", "--dataset", "tiny.csv", "--model", model, "-p", "random-delete",
            "--k", "5", "-o", "old.duckdb")
    assert recaudit_here(*args, "--seeds", "1", cwd=tmp_path).returncode == 0
    with AuditStore(tmp_path / "old.duckdb", read_only=True) as s:
        assert set(s.trials().dataset) == {"tiny.csv"}  # the file's name, not its path
    # what a store written before looked like: `name:path`
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    con.execute("UPDATE trials SET dataset = 'tiny:tiny.csv'")
    con.close()
    proc = recaudit_here(*args, "--seeds", "2", cwd=tmp_path)  # resumed with one seed more
    assert proc.returncode == 0, proc.stderr
    with AuditStore(tmp_path / "old.duckdb", read_only=True) as s:
        trials = s.trials()
    assert len(trials) == 2 and set(trials.dataset) == {"tiny:tiny.csv"}
    assert proc.stdout.count("Rank-list sensitivity") == 1  # one table, not split in two
