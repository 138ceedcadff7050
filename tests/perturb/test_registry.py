"""The perturbation protocol and registry: families by prefix, entry points, and a runner that
asks a family what it needs instead of knowing it."""

import subprocess
import sys
import textwrap
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from recaudit.errors import ConfigError
from recaudit.perturb import (ENTRY_POINTS, Context, Description, Needs, Perturbation,
                              EditSpec, parse, register_family)

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name,description,needs", [
    ("none", Description("none", reference=True), Needs(rng=False)),
    ("seed-only", Description("seed-only", reference=True), Needs(reseed=True, rng=False)),
    ("casper-delete", Description("casper-delete", "delete", 1), Needs(rng=False)),
    ("casper-delete-k4", Description("casper-delete", "delete", 4), Needs(rng=False)),
    ("random-replace-popular-k2", Description("random-replace-popular", "replace", 2), Needs()),
    ("remove-middle-3", Description("remove-middle", "delete", 3, "middle"), Needs(rng=False)),
    ("tracin-delete", Description("tracin-delete", "delete", 1),
     Needs(model=True, lazy_model=True, model_params={"checkpoint_every": 1}, rng=False)),
])
def test_builtin_specs_describe_themselves_and_declare_their_needs(name, description, needs):
    spec = parse(name)
    assert isinstance(spec, Perturbation)
    assert spec.describe() == description and spec.needs == needs


def test_names_tables_and_specs_all_parse():
    spec = parse("casper-delete", max_len=50)
    assert parse({"name": "casper-delete", "max_len": 50}) == spec
    assert parse(spec.to_dict()) == spec and parse(spec) is spec
    assert parse({"family": "", **spec.to_dict()}) == spec
    with pytest.raises(ConfigError, match="unknown perturbation family 'nope:'"):
        parse("nope:thing")
    with pytest.raises(ConfigError, match="a name or a table"):
        parse(3)


def test_fuzz_registers_its_prefix_and_reads_its_tables():
    from recaudit.fuzz import FuzzSpec

    spec = parse("fuzz:AMR:10")
    assert isinstance(spec, FuzzSpec) and spec.needs == Needs(recommendations=True,
                                                              protected=True)
    assert spec.describe() == Description("fuzz:AMR", "add", 10)
    assert parse(spec.to_dict()) == spec == parse({"name": "fuzz:AMR:10"})
    assert parse("fuzz:ZERO:1").describe().reference
    assert parse({"name": "fuzz:APORTFOLIO:5", "portfolio": ["AMU", "AMR"]}).describe() == \
        Description("fuzz:APORTFOLIO:portfolio=AMU+AMR", "add", 5)


def test_a_family_is_registered_once():
    with pytest.raises(ValueError, match="registered twice"):
        register_family("fuzz", parse=EditSpec.from_dict, from_dict=EditSpec.from_dict,
                        examples=list)
    with pytest.raises(ValueError, match="lower case"):
        register_family("Bad:", parse=parse, from_dict=parse, examples=list)


def test_the_package_declares_fuzz_as_an_entry_point():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = meta["project"]["entry-points"][ENTRY_POINTS]
    assert declared == {"fuzz": "recaudit.fuzz._spec"}


def test_an_unknown_prefix_is_looked_up_in_the_entry_points():
    """In a fresh process, with the entry-point metadata of an installed recaudit: parsing a
    ``fuzz:`` name imports the declared module, which registers the family."""
    code = textwrap.dedent(f"""
        import importlib.metadata as md, sys
        ep = md.EntryPoint("fuzz", "recaudit.fuzz._spec", {ENTRY_POINTS!r})
        real = md.entry_points
        md.entry_points = lambda **kw: [ep] if kw.get("group") == {ENTRY_POINTS!r} else real(**kw)
        from recaudit.perturb import parse
        assert "recaudit.fuzz" not in sys.modules
        print(type(parse("fuzz:ARAND:3")).__name__, "recaudit.fuzz._spec" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={"PYTHONPATH": str(REPO / "src"), "PATH": ""})
    assert out.stdout.split() == ["FuzzSpec", "True"], out.stderr


@dataclass(frozen=True)
class Probe:
    """A family made up here: it needs everything and records what it was given."""

    count: int

    @property
    def name(self):
        return f"probe:{self.count}"

    @property
    def needs(self):
        return Needs(recommendations=True, model=True, model_params={"checkpoint_every": 1},
                     protected=True)

    def describe(self):
        return Description("probe", "delete", self.count)

    def to_dict(self):
        return {"family": "probe", "count": self.count}

    def perturb(self, train, rng, context):
        SEEN.append(context)
        return train.take(np.arange(1, len(train))), _Record()


class _Record:
    def to_dict(self):
        return {"kind": "probe"}


SEEN: list[Context] = []
register_family("probe", parse=lambda name, **kw: Probe(int(name.split(":")[1])),
                from_dict=lambda d: Probe(d["count"]), examples=lambda: ["probe:<n>"])


def test_the_audit_runner_serves_any_family_by_its_needs(tmp_path):
    from recaudit.audit import (AuditConfig, DatasetSpec, MetricSpec, ModelSpec, AuditStore,
                                run_audit)

    data = DatasetSpec("synthetic", options={"n_users": 30, "n_items": 20, "n_clusters": 3,
                                             "mean_length": 12, "seed": 1})
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 1, "embedding_dim": 8,
                                                    "hidden_dim": 8}),),
                      perturbations=("probe:7",), datasets=(data,), metrics=MetricSpec(k=4),
                      output=str(tmp_path / "p.duckdb"))
    SEEN.clear()
    run_audit(cfg)
    (ctx,) = SEEN
    assert ctx.k == 4 and ctx.baseline.items.shape[0] == len(ctx.queries)
    assert ctx.model.config.checkpoint_every == 1 and ctx.model.checkpoints_
    assert len(ctx.protected) > 0 and np.all(np.diff(ctx.protected) > 0)
    with AuditStore(cfg.output, read_only=True) as st:
        row = st.trials().iloc[0]
        assert (row.perturbation, row.family, row["count"], row.edit) == \
            ("probe:7", "probe", 7, "delete")
        assert st.records()[row.trial_id] == {"kind": "probe"}
