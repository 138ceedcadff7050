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


def test_every_name_is_listed_with_what_it_does(tmp_path):
    proc = recaudit_here("perturbations", "list", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("│")[1].strip(): line for line in proc.stdout.splitlines()
            if line.startswith("│") and line.split("│")[1].strip()}
    assert _fresh_available() <= set(rows)  # fuzz:ZERO:<n> too, not turned into an emoji
    assert "delete the interaction whose change cascades furthest" in rows["casper-delete"]
    assert "max_len" in rows["casper-delete"] and "max_len" not in rows["random-delete"]
    assert "noise floor" in rows["seed-only"]
    assert "fuzzing (Shriver 2018)" in rows["fuzz:AMR:<n>"]


def test_a_filter_shows_the_matching_names(tmp_path):
    proc = recaudit_here("perturbations", "list", "casper", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = {line.split("│")[1].strip() for line in proc.stdout.splitlines()
             if line.startswith("│") and line.split("│")[1].strip()}
    assert names == {n for n in _fresh_available() if "casper" in n}
    err = one_error(recaudit_here("perturbations", "list", "caspr", cwd=tmp_path))
    assert "no perturbation name contains 'caspr'" in err
