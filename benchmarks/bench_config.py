"""Validating a configuration: recaudit's Config convention against pydantic v2 and msgspec.

recaudit validates its configuration files with hand-written code (:mod:`recaudit.config`:
frozen dataclasses, ``Literal`` and nested types checked, unknown keys named with the closest
valid key, errors carrying the TOML file and line). Would a well-kept library do the same job?
This measures, in one run and on the same data (an ``AuditConfig`` with two models, three
perturbations, a dataset with options and an executor):

- the import cost of each library (``python -X importtime``, cumulative microseconds of the
  top-level package, best of 5 fresh processes);
- the time to validate the config from plain data (best of 200 calls);
- the error each gives for three mistakes users make: a misspelt key, a value outside a
  ``Literal``, a wrong type deep inside a nested table.

Anchors: pydantic v2 (a ``BaseModel`` mirror of the same fields, ``extra="forbid"``) and
msgspec (a ``msgspec.Struct`` mirror, ``forbid_unknown_fields``), measured in the same run.
The mirrors check types and unknown keys only; recaudit's validation also parses every
perturbation name and checks the values (``recaudit.audit.AuditConfig``), so its time is an
upper bound for the part the libraries would replace. Ratios are library / recaudit.

    python benchmarks/bench_config.py
"""


import re
import subprocess
import sys
import timeit
from typing import Any, Literal

DATA: dict[str, Any] = {
    "name": "bench", "seeds": [0, 1, 2], "draws": 1,
    "perturbations": ["random-delete", "casper-delete", "seed-only"],
    "models": [{"name": "gru4rec", "params": {"epochs": 5}}, {"name": "lstm"}],
    "datasets": [{"name": "synthetic", "options": {"n_users": 50}}],
    "executor": {"kind": "process", "workers": 2},
}
MISTAKES = {
    "misspelt key": {**DATA, "seeeds": [0]},
    "value outside a Literal": {**DATA, "executor": {"kind": "proces", "workers": 2}},
    "nested wrong type": {**DATA, "datasets": [{"name": "synthetic",
                                                "min_user_interactions": "ten"}]},
}


def import_us(module: str) -> int:
    """Cumulative import time of ``module`` in a fresh interpreter that has imported numpy
    already (recaudit needs it anyway; best of 5), microseconds."""
    best = None
    for _ in range(5):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                              f"import numpy; import {module}"],
                             capture_output=True, text=True, check=True).stderr
        row = [ln for ln in out.splitlines() if re.search(rf"\|\s+{re.escape(module)}$", ln)]
        us = int(row[-1].split("|")[1])
        best = us if best is None else min(best, us)
    return int(best or 0)


def recaudit_validate(data: dict[str, Any]) -> Any:
    from recaudit.audit import AuditConfig

    return AuditConfig.from_dict(data)


def _pydantic_types() -> Any:
    import pydantic

    forbid = pydantic.ConfigDict(extra="forbid", frozen=True)

    class Dataset(pydantic.BaseModel):
        model_config = forbid
        name: str = "synthetic"
        path: str | None = None
        options: dict[str, Any] = {}
        min_user_interactions: int = 0
        k_core: int | None = None
        sample_users: int | None = None

    class Model(pydantic.BaseModel):
        model_config = forbid
        name: str
        params: dict[str, Any] = {}
        stabilise: dict[str, Any] | None = None

    class Executor(pydantic.BaseModel):
        model_config = forbid
        kind: Literal["inprocess", "process", "ray"] = "inprocess"
        workers: int = 1

    class Audit(pydantic.BaseModel):
        model_config = forbid
        models: list[Model]
        perturbations: list[str | dict[str, Any]] = ["random-delete"]
        seeds: list[int] = [0]
        datasets: list[Dataset] = []
        executor: Executor = Executor()
        output: str = "audit.duckdb"
        name: str = "audit"
        draws: int = 1

    return Audit


def pydantic_validate(data: dict[str, Any]) -> Any:
    audit = _ADAPTERS.get("p")
    if audit is None:
        audit = _ADAPTERS["p"] = _pydantic_types()
    return audit.model_validate(data)


_ADAPTERS: dict[str, Any] = {}


def _msgspec_types() -> Any:
    import msgspec

    class Dataset(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        name: str = "synthetic"
        path: str | None = None
        options: dict[str, Any] = msgspec.field(default_factory=dict)
        min_user_interactions: int = 0
        k_core: int | None = None
        sample_users: int | None = None

    class Model(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        name: str
        params: dict[str, Any] = msgspec.field(default_factory=dict)
        stabilise: dict[str, Any] | None = None

    class Executor(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        kind: Literal["inprocess", "process", "ray"] = "inprocess"
        workers: int = 1

    class Audit(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
        models: list[Model]
        perturbations: list[str | dict[str, Any]] = msgspec.field(
            default_factory=lambda: ["random-delete"])
        seeds: list[int] = msgspec.field(default_factory=lambda: [0])
        datasets: list[Dataset] = msgspec.field(default_factory=list)
        executor: Executor = msgspec.field(default_factory=Executor)
        output: str = "audit.duckdb"
        name: str = "audit"
        draws: int = 1

    return Audit


def msgspec_validate(data: dict[str, Any]) -> Any:
    import msgspec

    audit = _ADAPTERS.get("m")
    if audit is None:
        audit = _ADAPTERS["m"] = _msgspec_types()
    return msgspec.convert(data, audit)


def error_of(fn: Any, data: dict[str, Any]) -> str:
    try:
        fn(data)
    except Exception as exc:  # the error text is what is measured
        return " ".join(str(exc).split())[:230]
    return "(accepted)"


def main() -> None:
    libs = {"recaudit": ("recaudit.config", recaudit_validate),
            "pydantic": ("pydantic", pydantic_validate),
            "msgspec": ("msgspec", msgspec_validate)}
    print("## Import and validation time")
    print("| library | import (ms) | validate (µs) | import ratio | validate ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    base: tuple[float, float] | None = None
    for name, (module, fn) in libs.items():
        imp = import_us(module) / 1000
        fn(DATA)  # build adapters once
        val = min(timeit.repeat(lambda fn=fn: fn(DATA), number=200, repeat=5)) / 200 * 1e6
        base = base or (imp, val)
        print(f"| {name} | {imp:.1f} | {val:.0f} | {imp / base[0]:.2f}x | {val / base[1]:.2f}x |")
    print("\n## Errors for three mistakes")
    for what, data in MISTAKES.items():
        print(f"\n### {what}")
        for name, (_, fn) in libs.items():
            print(f"- {name}: {error_of(fn, data)}")


if __name__ == "__main__":
    main()
