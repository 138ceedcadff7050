"""Measure the test suite and list in ``tests/slow.txt`` every test that takes at least
``--threshold`` seconds (setup, call and teardown together) and is not marked ``slow`` in its
file: ``tests/conftest.py`` marks the listed tests ``slow``, so ``pytest -m "not slow"`` (the
fast subset) stays quick while ``make test`` still runs everything.

    python tests/_measure_slow.py            # on the machine whose timings the list keeps

The list is data, measured: a test that became slow is listed at the next measurement, one that
became quick leaves it. A test that is slow everywhere (a process pool, a signal) is better
marked ``@pytest.mark.slow`` in its file, where a reader sees it.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = re.compile(r"^\s*([0-9.]+)s\s+(setup|call|teardown)\s+(\S.*?)\s*$")
HEADER = """\
# Tests marked `slow` by measurement (tests/conftest.py): each took at least {threshold:g} s
# (setup + call + teardown) in `pytest -m "not slow and not ray" -n auto` on a 2-core machine.
# Regenerate with `python tests/_measure_slow.py`; the fast subset then took {fast:.0f} s there.
"""


def measure(threshold: float, listed: bool) -> tuple[list[str], float]:
    """The tests of the fast subset taking at least ``threshold`` seconds, and its wall time
    (``listed``: with the tests of ``slow.txt`` marked, else without)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-n", "auto", "-m", "not slow and not ray",
           "-p", "no:cacheprovider", "--durations=0", "--durations-min=0.01"]
    env = {**os.environ, "RECAUDIT_SLOW_LIST": "1" if listed else "0"}
    done = subprocess.run(cmd, cwd=HERE.parent, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"the fast subset failed; nothing written\n{done.stdout[-4000:]}")
    per: collections.Counter[str] = collections.Counter()
    for line in done.stdout.splitlines():
        if m := LINE.match(line):
            per[m.group(3)] += float(m.group(1))
    wall = re.search(r"in ([0-9.]+)s", done.stdout.splitlines()[-1])
    return sorted(n for n, s in per.items() if s >= threshold), float(wall.group(1)) if wall else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threshold", type=float, default=0.5, help="seconds (default 0.5)")
    args = parser.parse_args()
    slow, _ = measure(args.threshold, listed=False)
    body = "\n".join(slow) + "\n"
    (HERE / "slow.txt").write_text(HEADER.format(threshold=args.threshold, fast=0) + body)
    _, fast = measure(float("inf"), listed=True)  # the fast subset without the listed tests
    (HERE / "slow.txt").write_text(HEADER.format(threshold=args.threshold, fast=fast) + body)
    print(f"{len(slow)} tests listed in tests/slow.txt; the fast subset now takes {fast:.0f} s")


if __name__ == "__main__":
    main()
