"""How long the ``recaudit`` command takes to answer when it has little to do (issues 47 and 50).

A command that reads a store (``status``, ``results``, ``slices``, ``exposure``), ``--help`` and
an argument error (a perturbation, ``--k``, a model, a dataset) should answer at once: what they
cost is nearly all the imports of a fresh interpreter. Each is timed as a user meets it,
``python -m recaudit ...`` in a new process, best of ``--repeat`` wall times and best of as many
CPU times (user + system: what a quiet machine's wall time comes near, imports running on one
core; on a loaded machine the wall time also counts the waits for a core), next to two anchors
measured in the same run: ``python -c pass`` (the interpreter) and ``python -c "import numpy"``
(what nearly every command imports). The imports of four packages alone are timed too. Each
then runs once more under ``python -X importtime``: the time all its imports took, and each
heavy package's share (torch, numba, scipy, pandas, pyarrow, duckdb; absent: not imported).
Goals (issue 50, a quiet machine, best of 3): ``status`` under 1 s, an argument error under
1.5 s.

``--src`` times another source tree in the same run (e.g. ``git archive`` of an older commit,
unpacked), so that two versions meet the same load::

    python benchmarks/bench_startup.py                        # builds a small store (~20 s)
    git archive 81057c2 src | tar -x -C /tmp/old
    python benchmarks/bench_startup.py --store s.duckdb --src /tmp/old/src --repeat 5

The store is a two-seed GRU4Rec audit (one epoch) of the synthetic data with random-delete and
the seed-only floor, built with this checkout's sources unless ``--store`` names one.

Measured 2026-11-28 on the shared 2-core machine at load average 9.7-9.9 (so the wall times
wait for a core; the CPU times are the figures to read), against 81057c2 in the same run, CPU
seconds best of 5, old -> new: ``status`` 2.11 -> 0.72, ``results`` 2.11 -> 0.84, ``slices``
2.01 -> 1.70, ``exposure`` 1.98 -> 1.62, ``-p random-delet`` 2.69 -> 0.71, ``--k 500`` 2.66 ->
0.71, ``--model gru4rek`` 1.24 -> 0.70, ``--dataset synthetik`` 2.93 -> 0.83, ``--help`` 0.28 ->
0.20 (``import numpy``: 0.12). Torch is imported by none of them now (before: every argument
error but the model name's), numba by none, scipy only by ``slices`` and ``exposure`` (their
intervals and tests: scipy.stats).

``reproduce list`` (the 29 committed records), 2026-11-29, same machine at load average 3
(two trainings running), against 125ce9a (``--src``), best of 3: 7.73 -> 0.76 CPU s (11.6 ->
1.2 s wall). The old one judges every record each time; the new one remembers each verdict
(``reproduce/_verdicts.py``) and, remembering, imports no scipy (0.68 s of imports before).
``python benchmarks/bench_startup.py --only "reproduce list" --src /tmp/old/src --repeat 3``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
RECORDS = HERE.parent / "docs" / "reproduction" / "records"
HEAVY = ("torch", "numba", "scipy", "pandas", "pyarrow", "duckdb")
#: Packages whose import alone is timed too (``python -c "import X"``).
IMPORTS = ("recaudit.studies", "recaudit.audit", "recaudit.experiment", "recaudit.models")


def commands(store: Path, scratch: Path) -> dict[str, list[str]]:
    """The commands timed, by name (``recaudit`` arguments)."""
    out = str(scratch / "never.duckdb")
    return {
        "help": ["--help"],
        "status": ["status", str(store)],
        "results": ["results", str(store)],
        "slices": ["slices", str(store), "--by", "activity"],
        "exposure": ["exposure", str(store)],
        # this checkout's committed records; best of the runs: the first judges every record,
        # the others read the verdicts it remembered (a source tree without, --src, judges
        # them every time)
        "reproduce list": ["reproduce", "list", "--records", str(RECORDS)],
        "error: -p typo": ["audit", "--dataset", "synthetic", "--model", "gru4rec",
                           "-p", "random-delet", "-o", out],
        "error: --k 500": ["audit", "--dataset", "synthetic", "--model", "gru4rec",
                           "--k", "500", "-o", out],
        "error: model name": ["audit", "--dataset", "synthetic", "--model", "gru4rek",
                              "-o", out],
        "error: dataset name": ["audit", "--dataset", "synthetik", "--model", "gru4rec",
                                "-o", out],
    }


def _env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH")) if p)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best_of(argv: list[str], src: Path | None, repeat: int, expect: int | None = None
            ) -> tuple[float, float]:
    """(best wall, best CPU) seconds of ``argv`` in a fresh process; CPU is the process's user
    and system time, which a quiet machine's wall time comes near (imports run on one core),
    while a loaded machine's wall time also counts the waits for a core."""
    walls, cpus = [], []
    for _ in range(repeat):
        cpu, t = _children_cpu(), time.perf_counter()
        proc = subprocess.run(argv, env=_env(src), capture_output=True, text=True)
        walls.append(time.perf_counter() - t)
        cpus.append(_children_cpu() - cpu)
        if expect is not None and proc.returncode != expect:
            raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}, expected {expect}:\n"
                             f"{proc.stderr[-2000:]}")
    return min(walls), min(cpus)


def heavy_imports(argv: list[str], src: Path) -> str:
    """What ``python ARGV`` spends importing (``-X importtime``, one run): all modules, and
    each heavy package's own modules (their self times summed, wherever imported), e.g.
    ``all 0.92: pandas 0.31, duckdb 0.04``."""
    proc = subprocess.run([sys.executable, "-X", "importtime", *argv], env=_env(src),
                          capture_output=True, text=True)
    total, spent = 0, dict.fromkeys(HEAVY, 0)
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)$", line)
        if m:
            total += int(m[1])
            top = m[2].split(".")[0]
            if top in spent:
                spent[top] += int(m[1])
    heavy = ", ".join(f"{name} {us / 1e6:.2f}" for name, us in spent.items() if us)
    return f"all {total / 1e6:.2f}: {heavy or 'none heavy'}"


def build_store(path: Path) -> None:
    args = ["audit", "--dataset", "synthetic", "--model", "gru4rec", "-p", "random-delete",
            "-p", "seed-only", "--seeds", "2", "--param", "epochs=1", "-o", str(path)]
    subprocess.run([sys.executable, "-m", "recaudit", *args], env=_env(HERE), check=True,
                   capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="an audit store to read (default: build one)")
    ap.add_argument("--src", type=Path, action="append", default=[],
                    help="another source tree to time beside this checkout's (repeatable)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per command (best of)")
    ap.add_argument("--only", action="append", default=[], help="time only these commands")
    opts = ap.parse_args()
    sources = [HERE, *(p.resolve() for p in opts.src)]
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        store = opts.store
        if store is None:
            store = scratch / "s.duckdb"
            print("building the store ...", file=sys.stderr)
            build_store(store)
        anchors = {"python -c pass": [sys.executable, "-c", "pass"],
                   "python -c 'import numpy'": [sys.executable, "-c", "import numpy"]}
        base = {name: best_of(argv, None, opts.repeat) for name, argv in anchors.items()}
        for name, (wall, cpu) in base.items():
            print(f"anchor {name}: {wall:.3f} s wall, {cpu:.3f} s CPU (best of {opts.repeat})")
        numpy_s = base["python -c 'import numpy'"][0]
        rows = {name: ["-m", "recaudit", *args]
                for name, args in commands(store, scratch).items()}
        rows.update({f"import {m}": ["-c", f"import {m}"] for m in IMPORTS})
        print(f"\n{'command':<24} {'source':<28} {'wall s':>7} {'CPU s':>7} {'/numpy':>7}  "
              "import s (-X importtime; heavy packages' own)")
        for name, argv in rows.items():
            if opts.only and name not in opts.only:
                continue
            expect = 2 if name.startswith("error") else 0
            for src in sources:
                best, cpu = best_of([sys.executable, *argv], src, opts.repeat, expect)
                label = "this checkout" if src == HERE else str(src)[-28:]
                print(f"{name:<24} {label:<28} {best:7.3f} {cpu:7.3f} "
                      f"{best / numpy_s:6.1f}x  {heavy_imports(argv, src)}", flush=True)
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
