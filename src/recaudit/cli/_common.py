"""What the sub-commands share: a console, list options, dataset arguments."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from recaudit.errors import ConfigError

__all__ = ["RUNNING", "as_flags", "console", "dataset_spec", "parse_duration", "parse_params",
           "progress_bar", "running", "split_list"]

#: The store a command is writing (``store``), so that an interrupt or a failed trial can say
#: what is saved, and the interrupt that stopped it (``interrupt``: typer turns every
#: ``KeyboardInterrupt`` into exit code 130 and drops it, and with it the number of running
#: trials abandoned and the signal).
RUNNING: dict[str, Any] = {}


@contextlib.contextmanager
def running(store: str | Path) -> Iterator[None]:
    """While a command runs a study into ``store`` (a store, or a folder of stores): an
    interruption or an error then says how many finished trials are saved there."""
    RUNNING["store"] = Path(store)
    try:
        yield
    except KeyboardInterrupt as exc:
        RUNNING["interrupt"] = exc
        raise


@contextlib.contextmanager
def as_flags(flags: dict[str, str]) -> Iterator[None]:
    """Errors of a config the command line built worded as its flags: an error at key
    ``perturbations[1]`` reads ``-p casper-delte: ...``, not as a key of a file the user never
    wrote (``flags``: key prefix -> the flag that gave it; the longest prefix wins)."""
    try:
        yield
    except ConfigError as exc:
        key = exc.key or ""
        hits = [k for k in flags if key == k or key.startswith((k + ".", k + "["))]
        if exc.source is not None or not hits:
            raise
        hit = max(hits, key=len)
        rest = key[len(hit):].lstrip(".")
        raise ConfigError(f"{flags[hit]}{f' ({rest})' if rest else ''}: {exc.message}",
                          hint=exc.hint) from None


def console() -> Any:
    """A rich console on the current ``sys.stdout``: the terminal's width; off a terminal
    (a pipe, a file, a CI log) ``COLUMNS`` when set, else 80 (rich's own rule). Every table
    the commands print fits 80 columns whole (:mod:`recaudit.cli._tables`); programs read
    ``--format csv`` or ``json``."""
    from rich.console import Console

    return Console(highlight=False)


class _NoBar:
    """What :func:`progress_bar` gives off a terminal: the bar's calls, doing nothing."""

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, *args: Any, **kwargs: Any) -> int:
        return 0

    def update(self, *args: Any, **kwargs: Any) -> None:
        return None


def progress_bar(*columns: Any, transient: bool = False) -> Any:
    """A rich progress bar on stderr while stderr is a terminal (never on stdout, where the
    tables go); off a terminal (a log file, a pipe, a test) nothing at all. Not a disabled
    ``Progress``: rich 13.0, our floor, still prints an empty line when a disabled bar stops,
    which put a blank line before the one-line error of a command that failed."""
    from rich.console import Console
    from rich.progress import Progress

    err = Console(stderr=True, highlight=False)
    if not err.is_terminal:
        return _NoBar()
    return Progress(*columns, console=err, transient=transient)


def split_list(text: str, option: str) -> list[str]:
    """The items of a comma-separated option (``--models a,b``); empty is an error."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise ConfigError(f"{option} is empty; give a comma-separated list")
    return parts


def dataset_spec(text: str, **fields: Any) -> Any:
    """A :class:`~recaudit.experiment.DatasetSpec`: a file when ``text`` names an existing
    file, else a registered dataset (or ``synthetic``)."""
    from recaudit.experiment import DatasetSpec

    path = Path(text)
    if path.is_file() or (path.suffix and path.exists()):
        return DatasetSpec(name=path.stem, path=str(path), **fields)
    if path.suffix and not path.exists() and ("/" in text or path.suffix in
                                              (".csv", ".tsv", ".parquet", ".dat", ".inter")):
        raise ConfigError(f"--dataset {text!r}: no such file",
                          hint="check the path, or give a registered name "
                               "(recaudit datasets list)")
    return DatasetSpec(name=text, **fields)


def parse_params(items: list[str]) -> dict[str, Any]:
    """``--param KEY=VALUE`` options as a dict (values read as JSON, else kept as text)."""
    import json

    params: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise ConfigError(f"--param {item!r} must look like KEY=VALUE (e.g. epochs=5)")
        key, value = item.split("=", 1)
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, option: str = "--budget") -> float:
    """Seconds of a duration such as ``90m``, ``2h``, ``1h30m``, ``45s`` or ``3600`` (seconds)."""
    import re

    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([smhd])", t)
    if not parts or re.sub(r"(\d+(?:\.\d+)?)\s*([smhd])", "", t).strip():
        raise ConfigError(f"{option} {text!r} is not a duration",
                          hint="write it like 90m, 2h, 1h30m or 45s")
    return float(sum(float(n) * _UNITS[u] for n, u in parts))
