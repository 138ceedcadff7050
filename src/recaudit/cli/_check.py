"""``recaudit models check MODEL [--param KEY=VALUE ...]``: the conformance kit as a table."""

from __future__ import annotations

import typer

from recaudit.cli._common import console as _console
from recaudit.cli._common import parse_params


def check_cmd(
    model: str = typer.Argument(..., help="A registered model name (see `models list`)."),
    param: list[str] = typer.Option([], "--param", help="Model parameter KEY=VALUE (JSON)."),
    only: list[str] = typer.Option([], "--only", help="Run only this check (repeatable)."),
) -> None:
    """Run the conformance kit on MODEL: determinism, sensitivity to one deletion, shapes,
    no padding, targets never read, ... Exit code 1 when a check fails.

    A command model: `recaudit models check command --param train="python fit.py {train}
    {seed} {model_dir}" --param rank="python rank.py {model_dir} {queries} {k} {output}"`.
    """
    from rich.markup import escape

    from recaudit.cli._tables import add_columns, result_table
    from recaudit.errors import ConfigError, did_you_mean
    from recaudit.models import create
    from recaudit.models.testing import CHECKS, run_conformance

    params = parse_params(param)
    create(model, **params)  # unknown model or parameter: a clean error before any check
    names = [c[0] for c in CHECKS]
    for name in only:
        if name not in names:
            raise ConfigError(f"--only {name!r} is not a check.{did_you_mean(name, names)} "
                              f"Checks: {', '.join(names)}")
    console = _console()
    with console.status("checking") as status:
        results = run_conformance(lambda: create(model, **params), only=tuple(only) or None,
                                  progress=lambda n: status.update(f"check: {n}"))
    table = result_table(f"conformance of {model}"
                         + (f" ({', '.join(param)})" if param else ""))
    add_columns(table, "check", "result", "seconds", "property; detail", left=2)
    table.columns[-1].justify, table.columns[-1].no_wrap = "left", False
    style = {"pass": "green", "FAIL": "bold red", "warn": "yellow"}
    for i, r in enumerate(results):
        table.add_row(escape(r.name), f"[{style[r.status]}]{r.status}[/]", f"{r.seconds:.1f}",
                      escape(r.description + (f"\n{r.detail}" if r.detail else "")),
                      end_section=i < len(results) - 1)
    console.print(table)
    failed = [r.name for r in results if r.status == "FAIL"]
    if failed:
        console.print(f"{len(failed)} of {len(results)} checks failed ({', '.join(failed)}): "
                      "audits of this model would not be reproducible or comparable.")
        # SystemExit, not typer.Exit: click returns typer.Exit's code from app() in
        # non-standalone mode, where cli.main would drop it
        raise SystemExit(1)
    console.print(f"all {len(results)} checks passed"
                  + (" (warnings are properties some models legitimately lack)"
                     if any(r.status == "warn" for r in results) else ""))
