"""The package as a user gets it: build the sdist and the wheel, check what they declare and hold,
install the wheel into a fresh environment outside the checkout and run recaudit from there.

usage: python .ci/package_check.py [--dist DIR] [--keep]

The interpreter that runs this needs ``build`` (the dev extra has it; ``make package`` runs it
with ``.venv/bin/python``). Steps, each timed:

1. **build** -- the files git knows (tracked, and untracked but not ignored) are copied to a
   temporary folder and ``python -m build`` runs there: the sdist, then the wheel built *from the
   sdist*, so a file the sdist lacks is missing from the wheel too. Nothing is written into the
   checkout (a build in place leaves ``src/recaudit.egg-info``, which ``PYTHONPATH=src`` would
   then read as the installed metadata).
2. **metadata** -- the wheel's METADATA and the sdist's PKG-INFO, validated by ``packaging``,
   against ``pyproject.toml``: name, the version of ``src/recaudit/_version.py`` (its one source),
   summary, requires-python, the licence expression and file, the README as a Markdown
   description, every requirement with its extra, torch pinned exactly.
3. **contents** -- the wheel holds exactly the checkout's ``src/recaudit`` files (code and package
   data: ``datasets.toml``, the report templates, ``py.typed``; no tests, docs or build output,
   no bytecode) and the entry points of ``pyproject.toml``; the sdist holds what a build needs.
4. **install** -- a fresh virtual environment in a temporary folder (``$TMPDIR``, else
   ``/dev/shm`` when it has 4 GB free, else the system's): torch at the pin first (so
   nothing else pulls another, several-GB build), then the wheel file with the ``report`` extra,
   torch held by a constraints file. No editable install, no ``PYTHONPATH``, and the commands
   run from a folder outside the checkout: ``recaudit`` must be imported from the environment.
5. **run** -- ``recaudit --version``, the default audit (``make demo``'s, one epoch) on the
   embedded synthetic dataset, ``recaudit report`` on its store, ``recaudit reproduce list``.

``--dist DIR`` copies the sdist and the wheel into DIR once every check holds (replacing earlier
recaudit files there); ``--keep`` keeps the temporary folder and prints it. Otherwise everything
is removed, passed or failed (a timed last step: a 1.5 GB environment takes a while to delete).
Exit 0 when every check holds, 1 with every failed check listed otherwise.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "recaudit"
#: files of the package that must be in the wheel whatever the checkout's listing says (the
#: default dataset's registry, the report's template, the typing marker)
DATA = ("recaudit/data/datasets.toml", "recaudit/report/templates/report.html.j2", "recaudit/py.typed")
#: what the sdist holds besides src/recaudit: what a build reads, and what setuptools writes
SDIST_TOP = {"PKG-INFO", "pyproject.toml", "README.md", "LICENSE", "setup.cfg"}
#: `make demo`'s audit (Makefile), trained one epoch instead of four to keep the check short
AUDIT = ["audit", "--dataset", "synthetic", "--model", "gru4rec", "-p", "random-delete", "-p",
         "seed-only", "--seeds", "3", "--workers", "2", "--param", "epochs=1", "--param",
         "samples=prefix", "--param", "batch_order=temporal", "--param", "max_len=10",
         "--param", "embedding_dim=64", "--param", "hidden_dim=64", "--output", "demo.duckdb"]
#: one experiment of each paper must be listed by `recaudit reproduce list`
PAPERS = ("oh2022-", "betello2023-", "zhu2023-", "shriver2018-")


class Failed(Exception):
    """A step that cannot go on (the checks after it need what it did not make)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dist", type=Path, help="copy the built sdist and wheel here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    if missing := [m for m in ("build", "packaging") if importlib.util.find_spec(m) is None]:
        print(f"error: {Path(__file__).name} needs {' and '.join(missing)} in {sys.executable}: "
              "`pip install build`, or `make package` (the dev extra has it)", file=sys.stderr)
        return 2
    start = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="recaudit-package-", dir=_scratch()))
    if tmp.resolve().is_relative_to(ROOT):
        shutil.rmtree(tmp)
        print(f"error: the temporary folder {tmp} is inside the checkout; set TMPDIR elsewhere",
              file=sys.stderr)
        return 2
    problems: list[str] = []
    try:
        _check(tmp, problems, args.dist)
    except Failed as e:
        problems.append(str(e))
    except subprocess.TimeoutExpired as e:
        problems.append(f"`{' '.join(map(str, e.cmd))}` ran past {e.timeout:.0f} s")
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            with _step("remove the temporary folder"):
                try:
                    shutil.rmtree(tmp)
                except OSError as e:
                    print(f"warning: could not remove {tmp}: {e}", file=sys.stderr)
    total = time.perf_counter() - start
    if problems:
        print(f"package check FAILED after {total:.0f} s:", file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"package check passed in {total:.0f} s")
    return 0


def _check(tmp: Path, problems: list[str], dist: Path | None) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    version = source_version(ROOT / "src" / PACKAGE / "_version.py")
    files = checkout_files(ROOT)
    with _step("build the sdist, then the wheel from it"):
        sdist, wheel = build_dists(files, tmp)
    print(f"  {sdist.name} ({sdist.stat().st_size / 1e6:.2f} MB), "
          f"{wheel.name} ({wheel.stat().st_size / 1e6:.2f} MB)")
    with _step("check the metadata and contents"):
        expected = {f.relative_to("src").as_posix() for f in files
                    if f.parts[:2] == ("src", PACKAGE) and "__pycache__" not in f.parts}
        with zipfile.ZipFile(wheel) as z:
            names = z.namelist()
            dist_info = f"{PACKAGE}-{version}.dist-info"
            metadata = z.read(f"{dist_info}/METADATA") if f"{dist_info}/METADATA" in names else None
            entry_points = (z.read(f"{dist_info}/entry_points.txt").decode()
                            if f"{dist_info}/entry_points.txt" in names else "")
        with tarfile.open(sdist) as t:
            members = [m.name for m in t.getmembers() if m.isfile()]
            top = f"{PACKAGE}-{version}/"
            pkg_info = t.extractfile(f"{top}PKG-INFO") if f"{top}PKG-INFO" in members else None
            pkg_info_bytes = pkg_info.read() if pkg_info else None
        problems += wheel_problems(names, expected, version)
        problems += sdist_problems(members, expected, version)
        problems += entry_point_problems(entry_points, project)
        readme = (ROOT / "README.md").read_text("utf-8")
        for label, raw in (("wheel METADATA", metadata), ("sdist PKG-INFO", pkg_info_bytes)):
            if raw is None:
                problems.append(f"{label}: missing")
            else:
                problems += [f"{label}: {p}" for p in metadata_problems(raw, project, version, readme)]
    if problems:
        raise Failed("not installing a package that failed the checks above")
    venv = tmp / "venv"
    run_dir = tmp / "run"
    run_dir.mkdir()
    torch = torch_pin(project)
    with _step("install torch, then the wheel with the report extra, into a fresh environment"):
        python = install(venv, wheel, torch, tmp)
    env = _clean_env(venv, tmp)
    with _step("run the installed recaudit outside the checkout"):
        problems += run_installed(python, venv, run_dir, env, version, torch.split("==")[1])
    if dist is not None and not problems:  # only a package that passed
        dist.mkdir(parents=True, exist_ok=True)
        for old in [*dist.glob(f"{PACKAGE}-*.whl"), *dist.glob(f"{PACKAGE}-*.tar.gz")]:
            old.unlink()
        for f in (sdist, wheel):
            shutil.copy2(f, dist / f.name)
        print(f"  {dist}/: {sdist.name}, {wheel.name}")


def _scratch() -> str | None:
    """Where the temporary folder goes: ``$TMPDIR`` when set; else ``/dev/shm`` (memory) when it
    has room, since writing and deleting the environment's 27,000 files there takes seconds, where
    on an ext4 disk mounted with ``discard`` deleting them alone took 66-111 s; else the system's
    temporary folder."""
    shm = Path("/dev/shm")
    if os.environ.get("TMPDIR") or not shm.is_dir() or not os.access(shm, os.W_OK):
        return None
    return str(shm) if shutil.disk_usage(shm).free > 4 << 30 else None


def source_version(path: Path) -> str:
    """The string assigned to ``__version__`` in ``path``, read without importing it (as the
    build reads it)."""
    for node in ast.parse(path.read_text("utf-8")).body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets)):
            return str(node.value.value)
    raise Failed(f"{path}: no literal `__version__ = \"...\"`")


def checkout_files(root: Path) -> list[Path]:
    """The checkout's files as git sees them (tracked, and untracked but not ignored), relative
    to ``root``; deleted ones left out."""
    try:
        out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=root,
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise Failed(f"{root} is not a git checkout (git ls-files: {e})") from e
    return [Path(p) for p in sorted(set(out.decode().split("\0")) - {""}) if (root / p).is_file()]


def build_dists(files: Iterable[Path], tmp: Path) -> tuple[Path, Path]:
    """``python -m build`` of a copy of ``files``: the sdist, then the wheel from the sdist."""
    copy, out = tmp / "checkout", tmp / "dist"
    for f in files:
        (copy / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, copy / f)
    proc = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(copy)],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise Failed(f"python -m build exited {proc.returncode}:\n{_tail(proc)}")
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    if len(sdists) != 1 or len(wheels) != 1:
        raise Failed(f"python -m build made {[p.name for p in out.iterdir()]}, not one sdist and "
                     "one wheel")
    return sdists[0], wheels[0]


def wheel_problems(names: list[str], expected: set[str], version: str) -> list[str]:
    """What is wrong with a wheel holding ``names`` when the package's files are ``expected``
    (paths from ``src/``)."""
    problems = []
    dist_info = f"{PACKAGE}-{version}.dist-info/"
    package = {n for n in names if n.startswith(f"{PACKAGE}/")}
    meta = {n.removeprefix(dist_info) for n in names if n.startswith(dist_info)}
    other = sorted(set(names) - package - {dist_info + m for m in meta})
    if missing := sorted(expected - package):
        problems.append(f"wheel lacks {len(missing)} file(s) of src/{PACKAGE} (package data is "
                        f"listed in [tool.setuptools.package-data]): {', '.join(missing[:10])}")
    if extra := sorted(package - expected):
        problems.append(f"wheel holds {len(extra)} file(s) that src/{PACKAGE} does not: "
                        f"{', '.join(extra[:10])}")
    if missing_data := [d for d in DATA if d not in package]:
        problems.append(f"wheel lacks the package data {', '.join(missing_data)}")
    if other:
        problems.append(f"wheel holds files outside {PACKAGE}/ and its dist-info (tests, docs, "
                        f"build output?): {', '.join(other[:10])}")
    if bytecode := [n for n in names if n.endswith((".pyc", ".pyo")) or "__pycache__" in n]:
        problems.append(f"wheel holds bytecode: {', '.join(bytecode[:5])}")
    needed = {"METADATA", "WHEEL", "RECORD", "entry_points.txt", "licenses/LICENSE"}
    if lacking := sorted(needed - meta):
        problems.append(f"wheel's {dist_info} lacks {', '.join(lacking)}")
    return problems


def sdist_problems(members: list[str], expected: set[str], version: str) -> list[str]:
    """What is wrong with an sdist holding ``members`` (files, with their top folder)."""
    top = f"{PACKAGE}-{version}/"
    if outside := [m for m in members if not m.startswith(top)]:
        return [f"sdist holds files outside {top}: {', '.join(outside[:5])}"]
    rel = {m.removeprefix(top) for m in members}
    problems = []
    if lacking := sorted(SDIST_TOP - {"setup.cfg"} - rel):
        problems.append(f"sdist lacks {', '.join(lacking)}")
    source = {r.removeprefix("src/") for r in rel if r.startswith(f"src/{PACKAGE}/")}
    if missing := sorted(expected - source):
        problems.append(f"sdist lacks {len(missing)} file(s) of src/{PACKAGE}: {', '.join(missing[:10])}")
    allowed = {r for r in rel if r in SDIST_TOP or r.startswith((f"src/{PACKAGE}/", f"src/{PACKAGE}.egg-info/"))}
    if stray := sorted(rel - allowed):
        problems.append(f"sdist holds files a build does not need: {', '.join(stray[:10])}")
    if extra := sorted(source - expected):
        problems.append(f"sdist holds files that src/{PACKAGE} does not: {', '.join(extra[:10])}")
    return problems


def entry_point_problems(text: str, project: dict) -> list[str]:
    """The wheel's ``entry_points.txt`` against ``[project.scripts]`` and
    ``[project.entry-points]``."""
    import configparser

    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(text)
    have = {(g, k.strip(), v.strip()) for g in parser.sections() for k, v in parser[g].items()}
    want = {("console_scripts", k, v) for k, v in project["project"].get("scripts", {}).items()}
    for group, entries in project["project"].get("entry-points", {}).items():
        want |= {(group, k, v) for k, v in entries.items()}
    if have != want:
        return [f"wheel's entry points {sorted(have)} are not pyproject.toml's {sorted(want)}"]
    return []


def metadata_problems(raw: bytes, project: dict, version: str, readme: str) -> list[str]:
    """Core metadata ``raw`` (METADATA or PKG-INFO) validated, then compared with
    ``pyproject.toml``'s ``[project]``."""
    from packaging.metadata import Metadata
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    try:
        meta = Metadata.from_email(raw, validate=True)
    except ExceptionGroup as e:
        return [f"invalid core metadata: {'; '.join(str(x) for x in e.exceptions)}"]
    p = project["project"]
    problems = []
    facts = {
        "name": (meta.name, p["name"]),
        "version": (str(meta.version), version),
        "summary": (meta.summary, p["description"]),
        "requires-python": (str(meta.requires_python), p["requires-python"]),
        "license expression": (meta.license_expression, p["license"]),
        "license files": (meta.license_files, p.get("license-files")),
        "description type": (meta.description_content_type, "text/markdown"),
    }
    for field, (have, want) in facts.items():
        if have != want:
            problems.append(f"{field} is {have!r}, pyproject.toml says {want!r}")
    if (meta.description or "").strip() != readme.strip():
        problems.append("the description is not README.md")

    def key(req: Requirement, extra: str) -> tuple[str, str, str, str]:
        return (canonicalize_name(req.name), str(req.specifier), ",".join(sorted(req.extras)), extra)

    extras = {canonicalize_name(x): reqs for x, reqs in p.get("optional-dependencies", {}).items()}
    want_reqs = {key(Requirement(r), "") for r in p["dependencies"]}
    want_reqs |= {key(Requirement(r), x) for x, reqs in extras.items() for r in reqs}
    have_reqs = set()
    for req in meta.requires_dist or []:
        if req.marker is None:
            have_reqs.add(key(req, ""))
            continue
        where = [x for x in (meta.provides_extra or []) if req.marker.evaluate({"extra": x})]
        have_reqs |= {key(req, x) for x in where} or {key(req, f"? {req.marker}")}
    if have_reqs != want_reqs:
        problems.append(f"requirements differ from pyproject.toml: missing "
                        f"{sorted(want_reqs - have_reqs)}, extra {sorted(have_reqs - want_reqs)}")
    if set(meta.provides_extra or []) != set(extras):
        problems.append(f"extras {sorted(meta.provides_extra or [])}, pyproject.toml declares "
                        f"{sorted(extras)}")
    torch = [r for r in meta.requires_dist or [] if r.name == "torch" and r.marker is None]
    if len(torch) != 1 or len(torch[0].specifier) != 1 or next(iter(torch[0].specifier)).operator != "==":
        problems.append(f"torch is not pinned to one version: {[str(r) for r in torch]}")
    return problems


def torch_pin(project: dict) -> str:
    """The ``torch==X`` requirement of ``[project] dependencies``."""
    pins = [d for d in project["project"]["dependencies"] if d.replace(" ", "").startswith("torch==")]
    if len(pins) != 1:
        raise Failed(f"pyproject.toml: no single torch==X among the dependencies: {pins}")
    return pins[0].replace(" ", "")


def install(venv: Path, wheel: Path, torch: str, tmp: Path) -> Path:
    """A fresh virtual environment at ``venv`` with ``torch`` first, then ``wheel[report]``."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    constraints = tmp / "constraints.txt"
    constraints.write_text(torch + "\n")
    # --no-compile: no bytecode for the ~15,000 modules torch and the others bring (what is
    # imported is compiled then); it took two thirds of the install's time on two cores
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile"]
    for args in ([torch], ["-c", str(constraints), f"{wheel}[report]"]):
        proc = subprocess.run(pip + args, capture_output=True, text=True, timeout=1800,
                              env=_clean_env(venv, tmp), cwd=tmp)
        if proc.returncode != 0:
            raise Failed(f"pip install {' '.join(args)} exited {proc.returncode}:\n{_tail(proc)}")
    return python


def run_installed(python: Path, venv: Path, cwd: Path, env: dict[str, str], version: str,
                  torch: str) -> list[str]:
    """recaudit from ``venv``, run in ``cwd``: where it is imported from, its version, the default
    audit, its report and the reproduction list."""
    problems = []
    probe = ("import importlib.metadata as m, json, sys, recaudit, torch; print(json.dumps("
             "{'file': recaudit.__file__, 'version': recaudit.__version__, 'path': sys.path, "
             "'metadata': m.version('recaudit'), 'torch': torch.__version__}))")
    where = json.loads(_run([str(python), "-c", probe], cwd, env, 120).stdout)
    if not Path(where["file"]).resolve().is_relative_to(venv.resolve()):
        problems.append(f"recaudit was imported from {where['file']}, not from the environment")
    if on_path := [p for p in where["path"] if p and Path(p).resolve().is_relative_to(ROOT)]:
        problems.append(f"the checkout is on the installed environment's sys.path: {on_path}")
    if where["version"] != version or where["metadata"] != version:
        problems.append(f"installed recaudit.__version__ {where['version']!r}, metadata "
                        f"{where['metadata']!r}, source {version!r}")
    if where["torch"].split("+")[0] != torch:
        problems.append(f"the environment's torch is {where['torch']}, not the pin")
    recaudit = str(venv / "bin" / "recaudit")
    out = _run([recaudit, "--version"], cwd, env, 120).stdout.strip()
    if out != f"recaudit {version}":
        problems.append(f"`recaudit --version` printed {out!r}")
    with _step("  the default audit on the embedded synthetic dataset (one epoch)"):
        out = _run([recaudit, *AUDIT], cwd, env, 1800).stdout
    store = cwd / "demo.duckdb"
    if not store.is_file() or not all(w in out for w in ("Rank-list sensitivity", "random-delete",
                                                         "seed-only", "RBO")):
        problems.append(f"the audit did not write its store and table:\n{out[-2000:]}")
        return problems
    with _step("  recaudit report"):
        _run([recaudit, "report", str(store), "-o", "report.html"], cwd, env, 600)
    page = (cwd / "report.html").read_text("utf-8") if (cwd / "report.html").is_file() else ""
    if f'content="recaudit {version}"' not in page or "<svg" not in page:
        problems.append(f"report.html ({len(page)} characters) lacks its generator line or figures")
    with _step("  recaudit reproduce list"):
        out = _run([recaudit, "reproduce", "list"], cwd, env, 600).stdout
    if missing := [p for p in PAPERS if p not in out]:
        problems.append(f"`recaudit reproduce list` names no experiment of {missing}:\n{out[-2000:]}")
    return problems


def _clean_env(venv: Path, tmp: Path) -> dict[str, str]:
    """The environment's variables without anything that points into the checkout or another
    Python (PYTHONPATH, a virtual environment, recaudit's own settings); caches in ``tmp``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "RECAUDIT_")) and k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["RECAUDIT_DATA"] = str(tmp / "recaudit-data")
    env["MPLCONFIGDIR"] = str(tmp / "matplotlib")
    return env


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise Failed(f"`{' '.join(Path(cmd[0]).name if i == 0 else c for i, c in enumerate(cmd))}` "
                     f"exited {proc.returncode}:\n{_tail(proc)}")
    return proc


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    return ((proc.stdout or "") + (proc.stderr or ""))[-3000:]


class _step:
    """Prints a step's name and, at its end, its seconds."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.start = time.perf_counter()
        print(f"{self.name} ...", flush=True)

    def __exit__(self, *exc: object) -> None:
        print(f"{self.name}: {time.perf_counter() - self.start:.0f} s", flush=True)


if __name__ == "__main__":
    sys.exit(main())
