"""Issue 40, item 6: ``recaudit perturbations list`` names every perturbation ``-p`` takes,
with a line in words (through the command's entry, ``recaudit.cli.main``)."""

from __future__ import annotations

from ._entry import one_error, recaudit_here


def _fresh_available() -> set[str]:
    """The names a fresh process knows (other tests register families in this one)."""
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import json; from recaudit.perturb import "
                          "available; print(json.dumps(available()))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def _entries(out: str) -> dict[str, str]:
    """Each name and its text (the lines of its block: what it does, its family and
    parameters), whitespace joined: the text wraps at the console's width."""
    lines = out.splitlines()
    body = lines[next(i for i, x in enumerate(lines) if x.startswith("───")) + 1:]
    rows: dict[str, str] = {}
    name = None
    for line in body:
        if not line.strip():
            name = None
            continue
        if name is None:
            if not line[:1].strip():
                break  # the note under the table
            name = line.split()[0]
            rows[name] = ""
        rows[name] += " " + " ".join(line.split()[1:] if line[:1].strip() else line.split())
    return {k: " ".join(v.split()) for k, v in rows.items()}


def test_every_name_is_listed_with_what_it_does(tmp_path):
    proc = recaudit_here("perturbations", "list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = _entries(proc.stdout)
    assert _fresh_available() <= set(rows)  # fuzz:ZERO:<n> too, not turned into an emoji
    assert "delete the interaction whose change cascades furthest" in rows["casper-delete"]
    assert "max_len" in rows["casper-delete"] and "max_len" not in rows["random-delete"]
    assert "noise floor" in rows["seed-only"]
    assert "fuzzing (Shriver 2018)" in rows["fuzz:AMR:<n>"]


def test_a_filter_shows_the_matching_names(tmp_path):
    proc = recaudit_here("perturbations", "list", "casper", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = set(_entries(proc.stdout))
    assert names == {n for n in _fresh_available() if "casper" in n}
    err = one_error(recaudit_here("perturbations", "list", "caspr", cwd=tmp_path))
    assert "no perturbation name contains 'caspr'" in err
