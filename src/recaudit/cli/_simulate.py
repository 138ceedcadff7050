"""``recaudit simulate mirror``: the MIRROR manipulation benchmark (Zhu et al. 2023)."""

from __future__ import annotations

import math
from pathlib import Path

import typer

from recaudit.cli._common import as_flags, running
from recaudit.cli._common import console as _console
from recaudit.errors import ConfigError

def parse_mixes(text: str) -> tuple[float, ...]:
    """``"0,0.5,1"`` -> (0, 0.5, 1); ``"0,0.2,...,1"`` -> the arithmetic progression 0, 0.2 … 1."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    try:
        if "..." in parts:
            i = parts.index("...")
            if i != 2 or len(parts) != 4:
                raise ConfigError(f"--mix: write a progression as 'a,b,...,c'; got {text!r}")
            a, b, c = float(parts[0]), float(parts[1]), float(parts[3])
            step = b - a
            if step <= 0 or c < a:
                raise ConfigError(f"--mix: a progression must increase; got {text!r}")
            n = int(math.floor((c - a) / step + 1e-9))
            vals = [round(a + k * step, 10) for k in range(n + 1)]
            if abs(vals[-1] - c) > 1e-9:
                vals.append(c)
            return tuple(vals)
        return tuple(float(p) for p in parts)
    except ValueError as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"--mix: expected comma-separated numbers in [0, 1]; got {text!r}") \
            from exc


def parse_seeds(text: str) -> tuple[int, ...]:
    """``"3"`` -> seeds 0, 1, 2; ``"4,7"`` -> seeds 4 and 7."""
    try:
        if "," in text:
            return tuple(int(p) for p in text.split(",") if p.strip())
        n = int(text)
    except ValueError as exc:
        raise ConfigError(f"--seeds: give a count (3) or a list (0,5,7); got {text!r}") from exc
    if n < 1:
        raise ConfigError(f"--seeds: the count must be >= 1; got {n}")
    return tuple(range(n))


def mirror_cmd(
    scenario: str = typer.Option("decoy-slate", "--scenario",
                                 help="decoy-slate (§5.1) or topic-sequential (§5.3)."),
    mix: str = typer.Option("0,0.2,...,1", "--mix",
                            help="Mix ratios of manipulative training data: '0,0.5,1' or "
                                 "'0,0.2,...,1'."),
    seeds: str = typer.Option("3", "--seeds", help="Number of seeds (0..n-1) or a list '0,5'."),
    algorithms: str = typer.Option(None, "--algorithms",
                                   help="Comma list: DeepFM,LambdaFM,SetRank (slate) or "
                                        "DNN,GRU,GRU-static (sequential)."),
    manipulative: str = typer.Option(None, "--manipulative",
                                     help="decoy|greedy|ppo (slate) or planner|ppo (sequential)."),
    n_train: int = typer.Option(None, "--n-train", min=10, help="Training slates / sessions."),
    n_eval: int = typer.Option(None, "--n-eval", min=1, help="Evaluation slates / users."),
    epochs: int = typer.Option(20, "--epochs", min=1, help="Training epochs of the algorithms."),
    patience: int = typer.Option(None, "--patience", min=1,
                                 help="Sequential only: stop training after this many epochs "
                                      "without a lower loss on 10% held-out rows (--epochs is "
                                      "then the maximum)."),
    explore: float = typer.Option(0.2, "--explore",
                                  help="Sequential only: chance a data-collection oracle shows a "
                                       "random candidate."),
    rbo_p: float = typer.Option(0.9, "--rbo-p", help="RBO persistence p of Preference Shift."),
    rbo_variant: str = typer.Option("ext", "--rbo-variant",
                                    help="RBO variant of Preference Shift: ext|min|max|trunc."),
    output: Path = typer.Option(Path("results/mirror.duckdb"), "--output", "-o",
                                help="Results store (tables mirror_trials, mirror_results; "
                                     "seeds it holds are not run again)."),
    workers: int = typer.Option(1, "--workers", min=1, help="Seeds run in parallel processes."),
    figure: str = typer.Option(None, "--figure",
                               help="Write the CTR/FCTR figure here (png, pdf or svg; also "
                                    "-mix and -rounds figures next to it when they apply)."),
) -> None:
    """Run the MIRROR benchmark and print CTR, FCTR, ManiScore / Preference Shift per mix ratio."""
    algos = tuple(a.strip() for a in algorithms.split(",") if a.strip()) if algorithms else None
    if patience is not None and scenario != "topic-sequential":
        raise ConfigError("--patience: early stopping is available for the sequential scenario "
                          "(DNN, GRU) only")
    flags = {"mixes": f"--mix {mix}", "seeds": f"--seeds {seeds}", "scenario": "--scenario",
             "algorithms": "--algorithms", "manipulative": "--manipulative",
             "n_train": "--n-train", "n_eval": "--n-eval", "train.epochs": "--epochs",
             "train.patience": "--patience", "train": "--epochs/--patience",
             "explore": "--explore", "rbo_p": "--rbo-p", "rbo_variant": "--rbo-variant"}
    with as_flags(flags):
        cfg = _config(scenario, mix, seeds, algos, manipulative, n_train, n_eval, epochs,
                      patience, explore, rbo_p, rbo_variant)
    _run(cfg, scenario, rbo_p, rbo_variant, output, workers, figure)


def _config(scenario, mix, seeds, algos, manipulative, n_train, n_eval, epochs, patience,
            explore, rbo_p, rbo_variant):
    """The :class:`~recaudit.simulate.MirrorConfig` of the command's options."""
    from recaudit.simulate import MirrorConfig, TrainConfig

    return MirrorConfig.from_dict({
        "scenario": scenario, "mixes": parse_mixes(mix), "seeds": parse_seeds(seeds),
        "algorithms": algos, "manipulative": manipulative, "n_train": n_train,
        "n_eval": n_eval, "train": TrainConfig(epochs=epochs, patience=patience),
        "explore": explore, "rbo_p": rbo_p, "rbo_variant": rbo_variant})


def _run(cfg, scenario, rbo_p, rbo_variant, output, workers, figure) -> None:
    """Run the MIRROR benchmark of ``cfg`` and print its table (and ``figure``)."""
    import pandas as pd
    from rich.markup import escape

    from recaudit.cli._tables import fitted
    from recaudit.experiment import Store, run_study
    from recaudit.simulate import MirrorStudy, read_results, summarise

    console = _console()
    study = MirrorStudy(cfg, output, workers=workers)
    ids = {t.id for t in study.plan()}
    with running(output), console.status("running MIRROR") as status:
        run_study(study, progress=lambda tid, done, total: status.update(
            f"MIRROR: {done}/{total} seeds"))
    with Store(output, read_only=True) as store:
        rows = read_results(store)
    rows = rows[rows["trial_id"].isin(ids)].drop(columns=["trial_id"])
    summ = summarise(rows)
    summ = summ[summ["round"].isna()]
    metrics = [m for m in ("ctr", "fctr", "mani_score", "ps", "ndcg", "auc")
               if m in set(summ["metric"])]
    title = f"MIRROR {scenario} ({len(cfg.seeds)} seed(s); mean ± sd)"
    if scenario == "topic-sequential":
        title += escape(f"; PS = 1 - RBO[{rbo_variant}, p={rbo_p:g}]")  # not rich markup
    cells_of: list[list[str]] = []
    keys = summ[["algorithm", "mix"]].drop_duplicates()
    for _, key in keys.iterrows():
        same_mix = (summ["mix"] == key["mix"]) | (summ["mix"].isna() & pd.isna(key["mix"]))
        sub = summ[(summ["algorithm"] == key["algorithm"]) & same_mix]
        cells = []
        for m in metrics:
            r = sub[sub["metric"] == m]
            if r.empty or r["mean"].isna().all():
                cells.append("-")
            else:
                sd = r["std"].iloc[0]
                cells.append(f"{r['mean'].iloc[0]:.4f}" + (f" ± {sd:.4f}" if sd == sd else ""))
        cells_of.append([str(key["algorithm"]),
                         "-" if key["mix"] != key["mix"] else f"{key['mix']:g}", *cells])
    console.print(fitted(console, title, ["algorithm", "mix", *metrics], cells_of))
    console.print(f"results: {output}", markup=False, soft_wrap=True)
    if figure:
        try:
            from recaudit.report import write_mirror_figures

            paths = write_mirror_figures(rows.to_dict(orient="records"), figure)
        except ModuleNotFoundError as exc:  # the report extra is optional
            if exc.name != "matplotlib":
                raise
            raise ConfigError("--figure needs matplotlib; install the report extra: "
                              "pip install 'recaudit[report]'") from None
        for path in paths:
            console.print(f"wrote figure {path}")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(no_args_is_help=True, help="Simulation benchmarks (MIRROR).")
    sub.command("mirror")(mirror_cmd)
    app.add_typer(sub, name="simulate")
