"""``docs/reproduction.md``: our numbers beside the papers', from the run records only.

First a table of every record with its scale, repetitions and verdict, the verdicts counted
per scale (those on other data than the paper's apart: :mod:`._overview`). Then per experiment
and recorded scale (paper first, beside small): the command, data, scale (what differs from
the paper), machine, wall time, the published values next to ours with our 95 % intervals
(with RBO p = 0.9 and Jaccard@k beside average overlap where a paper's "RBO" is average
overlap), the paper's claims tested on the recorded samples (on other data where a dataset
stands in for the paper's), the verdict, and notes on what differs or was checked; a scale
not recorded because its data cannot be downloaded here names the commands that record it.
"""

from __future__ import annotations

import re

import time
from pathlib import Path
from typing import Any

from recaudit.reproduce._audit import TRIAL_SECONDS
from recaudit.reproduce._experiment import Experiment
from recaudit.reproduce._overview import overview, repetitions
from recaudit.reproduce._recording import available, judge, refresh
from recaudit.reproduce.rules import UNMEASURED

__all__ = ["render_report", "write_report"]

_STATE = {"holds": "holds", "contradicted": "**contradicted**", "undecided": "undecided",
          "not measured": "not measured", "differs": "differs",
          "equivalent": "equivalent (no difference as large as the margin: the claimed effect, "
                        "if there is one, is smaller; neither held nor contradicted)"}


def _num(x: float | None) -> str:
    """Four decimals, one above 10, and three significant digits below 0.001 (Shriver's
    precisions of 1e-5 would all print as 0.0000)."""
    if x is None:
        return "–"
    if x != 0 and abs(x) < 1e-3:
        return f"{x:.3g}"
    return f"{x:.4f}" if abs(x) < 10 else f"{x:.1f}"


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min" if h else (f"{m} min {s:02d} s" if m else f"{s} s")


def _trial_time(rec: dict[str, Any]) -> str:
    """The trials' own time summed from the stores (:data:`TRIAL_SECONDS` measures), where the
    record has it: runs sharing a store, or recorded with ``--no-train``, show a wall time
    that says nothing of what training the numbers took."""
    spent = [v for k, v in rec["measures"].items() if k.endswith(f"/{TRIAL_SECONDS}")]
    if not spent:
        return ""
    return (f"; its trials took {_duration(sum(spent))} to train and rank (summed from the "
            "store, whichever run trained them)")


def _trained_on(rec: dict[str, Any]) -> str:
    """Where the trials were trained (the stores' ``versions.device``), when that is not
    simply this record's machine: a GPU, or several devices."""
    on = rec.get("trained_on") or {}
    devices = {d for ds in on.values() for d in ds}
    if not devices or all(d.startswith("cpu") for d in devices):
        return ""
    return "; trials trained on " + ", ".join(f"{', '.join(ds)} ({m})" for m, ds in on.items())


def _machine(m: dict[str, Any]) -> str:
    gpu = m.get("gpu") or "no GPU"
    return f"{m.get('cpus')} CPUs ({m.get('machine')}), {gpu}"


def _records(exp: Experiment, root: Path) -> list[tuple[dict[str, Any], bool]]:
    """Every recorded scale of ``exp`` (paper first), each compared anew with the
    experiment's values and claims (the recorded measures and samples are the data; the
    comparison is the current one: :func:`~recaudit.reproduce._recording.judge`), with
    whether its stored comparison was stale."""
    out = []
    for scale in ("paper", "small"):
        judged = judge(root, exp, scale)
        if judged is not None:
            rec, measures, stale = judged
            out.append(({**rec, "repetitions": repetitions(exp, rec.get("scope"),
                                                           measures.samples,
                                                           rec.get("sequential")),
                         "other_data": exp.substitute.get(scale)}, stale))
    return out


def _values_table(rec: dict[str, Any]) -> list[str]:
    rows = rec["values"]
    if not rows:
        return []
    also = sorted({k.rsplit("/", 1)[-1] for r in rows for k in r["also"]})
    names = {"rbo": "RBO p=0.9", "jaccard": "Jaccard@k"}
    head = ["value", "source", "paper", "ours"] + [names.get(a, a) for a in also] + ["match"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        comp = {k.rsplit("/", 1)[-1]: v for k, v in r["also"].items()}
        match = "–" if r["match"] is None else ("yes" if r["match"] else f"no (±{r['tol']:g})")
        ours = _num(r["ours"])
        if r.get("ci"):
            ours += f" [{_num(r['ci'][0])}, {_num(r['ci'][1])}]"
        cells = [r["label"], r["source"], _num(r["paper"]), ours] + \
            [_num(comp.get(a)) for a in also] + [match]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _p(p: float) -> str:
    return "–" if p != p else (f"{p:.1e}" if p < 1e-3 else f"{p:.3f}")


def _test(t: dict[str, Any]) -> str:
    """One tested comparison: direction, difference and interval, test, adjusted p, the
    detectable effect and, when undecided, what would decide it."""
    if t["test"] == UNMEASURED:
        return t["text"]
    if t.get("tie"):
        kind = "point values (no samples)" if t["test"] == "point" else \
            "every replicate and unit alike"
        return (f"{t['text']}: tie — both sides equal, without variation ({kind}): neither "
                "beats the other, so the strict comparison stays undecided and its negation "
                "('never beats') holds")
    if t["test"] in ("exact", "point"):
        kind = "exact" if t["test"] == "exact" else "point values (no samples)"
        return f"{t['text']}: {'yes' if t['truth'] else 'no'} ({kind})"
    state = {True: "yes", False: "**opposite**", None: "undecided"}[t["truth"]]
    if t["test"] == "sequential":
        state = "equivalent" if t.get("equivalent") else state
        text = (f"{t['text']}: {state} — difference {_num(t['difference'])}, interval "
                f"[{_num(t['low'])}, {_num(t['high'])}] at {t.get('look', 0)} replicates "
                f"(level {_p(t['p_adjusted'])} spent at that look; {t['levels']})")
        if t["truth"] is None and not t.get("equivalent"):
            text += (f"; the next rung, {t['next']} replicates, may decide it" if t.get("next")
                     else f"; would need about {t['needed']} replicates" if t.get("needed")
                     else "; more replicates alone would not decide it")
        return text
    if t.get("margin") is not None:  # equivalence: decided on the interval, not by p
        where = {True: "inside", False: "outside", None: "across"}[t["truth"]]
        return (f"{t['text']}: {state} — difference {_num(t['difference'])} "
                f"[{_num(t['low'])}, {_num(t['high'])}] {where} the margin "
                f"±{_num(t['margin'])} (two one-sided tests on the interval; {t['test']} "
                f"p of a zero difference {_p(t['p_adjusted'])}, which does not decide it; "
                f"{t['levels']})")
    text = (f"{t['text']}: {state} — difference {_num(t['difference'])} [{_num(t['low'])}, "
            f"{_num(t['high'])}], {t['test']}, p = {_p(t['p_adjusted'])}, detectable "
            f"{_num(t['detectable'])} ({t['levels']})")
    if t["truth"] is None:
        text += (f"; about {t['needed']} replicates (seeds or draws) would detect it"
                 if t["needed"] else "; more replicates alone would not decide it"
                 if t["levels"] != "queries only" else "; one replicate: run more seeds")
    return text


def _claim(c: dict[str, Any], whole: str | None = None) -> list[str]:
    """A claim and its comparisons; ``whole``: the data that stands in for the paper's at
    the record's scale (said once above the claims, not on each)."""
    state = _STATE[c["state"]]
    if c.get("other_data") and c["state"] in ("holds", "differs"):
        state += " on other data" + ("" if c["other_data"] == whole
                                     else f" ({c['other_data']})")
    lines = [f"- {state}: {c['text']} ({c['source']})"]
    if c.get("missing") and c["state"] in ("holds", "contradicted"):
        lines.append(f"  - decided without {', '.join(c['missing'])} (not measured): "
                     + ("whatever it gives" if len(c["missing"]) == 1 else
                        "whatever they give") + ", the measured comparisons settle it")
    tests = c.get("tests", [])
    shown = [t for t in tests if t["truth"] is not True] or tests
    for t in shown[:6]:
        lines.append(f"  - {_test(t)}")
    if len(shown) > 6:
        lines.append(f"  - … and {len(shown) - 6} more comparisons")
    elif len(shown) < len(tests):
        rest = len(tests) - len(shown)
        lines.append("  - (the other comparison holds)" if rest == 1 else
                     f"  - (the other {rest} comparisons hold)")
    return lines


def _experiment(exp: Experiment, recs: list[dict[str, Any]]) -> list[str]:
    out = [f"### {exp.name}: {exp.title}", "",
           f"- Artefacts: {exp.artefacts}", f"- Data: {exp.data}"]
    if exp.unavailable:
        return out + [f"- **Not run**: {exp.unavailable}", ""]
    if not recs:
        return out + ["- **Not run yet.** Run: `recaudit reproduce run "
                      f"{exp.name} --scale small`", ""]
    missing = [s for s in exp.scales if s not in {r["scale"] for r in recs}]
    plain = [s for s in missing if not exp.downloads.get(s)]
    if plain:
        out.append(f"- Not recorded at scale {', '.join(plain)}.")
    out += [_to_download(exp, s) for s in missing if exp.downloads.get(s)]
    out.append("")
    for rec in recs:
        out += _scale(rec, len(recs) > 1)
    if exp.notes:
        out += ["Notes:", ""] + [f"- {n}" for n in exp.notes] + [""]
    return out


def _to_download(exp: Experiment, scale: str) -> str:
    """What records ``scale`` of ``exp`` where its data must be downloaded first."""
    from recaudit.data import datasets

    reg = datasets.default_registry()
    names = exp.downloads[scale]
    said = "; ".join(f"`{d}`, {reg.spec(d).title}"
                     + (", registered with its SHA-256" if reg.spec(d).sha256_known else "")
                     for d in names)
    fetch = " and ".join(f"`recaudit datasets fetch {d}`" for d in names)
    return (f"- Not recorded at scale {scale}: it reads the paper's data ({said}), which the "
            f"machines that made these records could not download. With network access, "
            f"{fetch} downloads and checks it, then `recaudit reproduce run {exp.name} "
            f"--scale {scale}` records it.")


def _verdict(rec: dict[str, Any]) -> str:
    """The verdict, with what stood in for the paper's data where something did."""
    text = f"- Verdict: **{rec['verdict']}**"
    if rec.get("other_data"):
        return (text + f" — every claim tested on {rec['other_data']}: a finding about the "
                "paper's data holds or differs there, it is not contradicted by another "
                "dataset")
    others = sorted({c["other_data"] for c in rec["claims"] if c.get("other_data")})
    if others:
        n = sum(1 for c in rec["claims"] if c.get("other_data"))
        text += (f" — {n} of {len(rec['claims'])} claims are stated on data we do not have "
                 f"and tested on other data ({'; '.join(others)}): they hold or differ, they "
                 "do not contradict")
    return text


def _rounds(rec: dict[str, Any]) -> list[str]:
    """A run that went on until decided: its rounds, why it stopped, what each claim read."""
    from recaudit.reproduce._recording import STOPPED

    seq = rec.get("sequential")
    if not seq:
        return ["- Decided by fixed-sample tests on the grid the run was given (no look "
                "before the end; the sequential rules do not apply)."]
    grows = seq["grows"]
    steps = " → ".join(str(r[grows]) for r in seq["rounds"])
    margin = f", equivalence margin {seq['margin']:g}" if seq.get("margin") else ""
    used = "; ".join(f"{c['replicates']} for “{c['text'][:60]}{'…' if len(c['text']) > 60 else ''}” "
                     f"({c['state']})" for c in seq.get("claims", []))
    from recaudit.stats import LEGACY_RULE

    rule = seq.get("rule", LEGACY_RULE)   # records written before rules were named
    futility = "" if rule == LEGACY_RULE or "futility" not in seq else \
        f", futility {'on' if seq['futility'] else 'off'}"
    return [f"- Until decided (sequential rule {rule}: {RULE_WORDS.get(rule, rule)}; alpha "
            f"{seq['alpha']:g}, cap {seq['cap']} {grows}{margin}{futility}): "
            f"{len(seq['rounds'])} round(s), {grows} {steps}; stopped: "
            f"{STOPPED[seq['stopped']]}. {grows.capitalize()} each claim read: {used}."]


#: What each sequential rule is, in the reproduction page's words.
RULE_WORDS = {
    "bonferroni-sqrt": "repeated p-values on the ladder of looks with Bonferroni's spending, "
                       "the rule of runs begun before the group-sequential design; a run "
                       "continued past its first cap keeps it",
    "lan-demets-rho1": "group-sequential levels from the looks' joint law, with slack",
    "group-sequential-t": "group-sequential levels from the looks' joint law calibrated on "
                          "the t scale, the cap its last look, a non-binding futility stop",
}


def _scale(rec: dict[str, Any], titled: bool) -> list[str]:
    out = [f"#### Scale {rec['scale']}", ""] if titled else []
    out += [f"- Command: `{rec['command']}`",
            f"- Scale: **{rec['scale']}** — {rec['scale_note']}",
            f"- Machine: {_machine(rec['machine'])}; wall time {_duration(rec['wall_seconds'])}"
            + (f", CPU time {_duration(rec['cpu_seconds'])}" if "cpu_seconds" in rec else "")
            + (f" over {len(rec['invocations'])} invocations (a resumed run adds one)"
               if len(rec.get("invocations", [])) > 1 else "")
            + f" with {rec.get('workers', 1)} worker(s), load average "
            f"{'/'.join(str(x) for x in rec.get('load_average', []))} at start/end (started "
            f"{rec['started']}; recaudit {rec['versions'].get('recaudit')}, torch "
            f"{rec['versions'].get('torch')})" + _trial_time(rec) + _trained_on(rec),
            f"- Repetitions: {rec['repetitions']}", *_rounds(rec), _verdict(rec), ""]
    out += _values_table(rec)
    if rec["claims"]:
        on = f" on {rec['other_data']}" if rec.get("other_data") else ""
        how = ("read sequentially: repeated 95 % intervals on the ladder of looks, "
               "Bonferroni over the experiment's comparisons" if rec.get("sequential") else
               "Holm over the experiment's comparisons")
        out += ["", f"Claims of the paper, tested on our numbers{on} (alpha = "
                    f"{rec['alpha']:g}, {how}):", ""]
        out += [line for c in rec["claims"] for line in _claim(c, rec.get("other_data"))]
    return out + [""]


def _shown(root: Path) -> str:
    """``root`` as the page names it: relative to the checkout when it is this checkout's
    records folder (the page must read the same on every machine), else as given."""
    from recaudit.reproduce._recording import DEFAULT_RECORDS

    checkout = DEFAULT_RECORDS.parents[2]
    try:
        return str(root.resolve().relative_to(checkout.resolve()))
    except ValueError:
        return str(root)


def render_report(root: Path | str) -> str:
    """The Markdown page for every registered experiment, from the records under ``root``."""
    root = Path(root)
    return _render(root, {e.name: _records(e, root) for e in available()})


def _render(root: Path, judged: dict[str, list[tuple[dict[str, Any], bool]]]) -> str:
    exps = available()
    recs = {name: [rec for rec, _ in pairs] for name, pairs in judged.items()}
    lines = ["# Reproducing the papers", "",
             f"Generated by `recaudit reproduce report` from the run records in "
             f"`{_shown(root)}/` on "
             f"{time.strftime('%Y-%m-%d')}. Each experiment re-runs a table or figure; its "
             "claims are tested on the recorded per-query (or per-seed, per-set) values with the "
             "paper's own test and level — Oh et al. 2022 at 0.05, Betello et al. 2023 at "
             "1e-3 (Shapiro-Wilk, then paired t or Wilcoxon), Zhu et al. 2023 and Shriver 2018 "
             "at 0.05 (Welch for independent sets) — Holm-adjusted over each experiment. A "
             "claim **holds** (significant in the paper's direction), is **contradicted** "
             "(significant the other way) or is **undecided** (the run cannot tell; the "
             "smallest detectable effect and the replicates that would decide it are given); "
             "a claim tested on other data than the paper's (a dataset we have standing in for "
             "one we do not) holds or **differs** there, and is never counted as "
             "contradicting the paper. "
             "The verdict: **reproduced** (every claim holds, every published value lies "
             "within its tolerance of our 95 % interval), **direction reproduced** (the claims "
             "hold, the values differ), **contradicted** (a claim is), **undecided** (no claim "
             "contradicted, some undecided at this scale), **incomplete** (no claim "
             "contradicted, some not measured: trials missing), **holds on other data** / "
             "**differs on other data** (the claims were tested on data standing in for the "
             "paper's) or **not run**. "
             "`--scale small` runs "
             "each experiment in about an hour on 2 CPU cores with the reductions it lists; "
             "`--scale paper` uses the papers' settings, and the repetitions column says what "
             "each record holds (seeds, perturbation draws, test queries, users or "
             "modification sets). Where a paper's \"RBO\" is average overlap, both are shown.",
             ""]
    lines += overview(exps, recs, lambda e: _anchor(f"{e.name}: {e.title}"))
    for paper in dict.fromkeys(e.paper for e in exps):
        lines += [f"## {paper}", ""]
        for e in exps:
            if e.paper == paper:
                lines += _experiment(e, recs[e.name])
    return "\n".join(lines).rstrip() + "\n"


def write_report(root: Path | str, output: Path | str) -> list[Path]:
    """Write the page to ``output`` from the records under ``root``; every file written:
    the page, then the records whose stored comparison was stale (a verdict or a claim's
    state differs from today's evaluation), rewritten with today's so that each
    ``record.json`` says what the page says (their measures and samples are not touched)."""
    from recaudit._files import atomic_text

    root = Path(root)
    judged = {e.name: _records(e, root) for e in available()}
    page = atomic_text(output, _render(root, judged))
    strip = ("repetitions", "other_data")
    return [page] + [refresh(root, {k: v for k, v in rec.items() if k not in strip})
                     for pairs in judged.values() for rec, stale in pairs if stale]


def _anchor(heading: str) -> str:
    """The anchor GitHub and the documentation site (MyST) both give a heading: lower case,
    punctuation but ``-`` and ``_`` dropped, spaces as ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
