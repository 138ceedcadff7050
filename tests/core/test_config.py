"""The configuration convention: types, normalisation, closest keys, docs, TOML locations."""

import dataclasses
import importlib
import json
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest

import recaudit
from recaudit.config import Config, field_docs
from recaudit.errors import ConfigError


@dataclass(frozen=True)
class Inner(Config):
    """A nested table. name: what it is called. params: free parameters."""

    _shorthand = "name"
    name: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Outer(Config):
    """A test configuration.

    k: a positive integer. mode: ``a`` or ``b``.
    ratio: a number.
    inners: nested tables (or names). extra: optional nested table.
    """

    k: int = 10
    mode: Literal["a", "b"] = "a"
    ratio: float = 0.5
    inners: tuple[Inner, ...] = ()
    extra: Inner | None = None

    def validate(self) -> None:
        if self.k < 1:
            raise self.invalid("k", f"must be >= 1, got {self.k}")


def test_values_are_checked_and_normalised():
    o = Outer.from_dict({"k": np.int64(3), "ratio": 1, "inners": ["x", {"name": "y"}]})
    assert type(o.k) is int and o.k == 3 and type(o.ratio) is float
    assert o.inners == (Inner("x"), Inner("y")) and isinstance(o.inners, tuple)
    assert Outer.from_dict(json.loads(json.dumps(o.to_dict()))) == o
    assert o.replace(k=4).k == 4
    with pytest.raises(ConfigError, match="must be >= 1"):
        o.replace(k=0)


@pytest.mark.parametrize("data,key,needle", [
    ({"kk": 1}, "sec.kk", "Did you mean 'k'?"),
    ({"k": True}, "sec.k", "expected an integer, got bool"),
    ({"k": "3"}, "sec.k", "expected an integer"),
    ({"k": 0}, "sec.k", "must be >= 1"),
    ({"mode": "A "}, "sec.mode", "one of 'a', 'b'"),
    ({"ratio": [1]}, "sec.ratio", "expected a number"),
    ({"inners": "x"}, "sec.inners", "expected a list"),
    ({"inners": [{"nme": "x"}]}, "sec.inners[0].nme", "Did you mean 'name'?"),
    ({"inners": ["x", {"name": 3}]}, "sec.inners[1].name", "expected a string"),
    ({"extra": {"params": {}}}, "sec.extra.name", "missing required key 'name'"),
])
def test_every_error_names_its_key(data, key, needle):
    with pytest.raises(ConfigError) as err:
        Outer.from_dict(data, key="sec")
    assert err.value.key == key and needle in str(err.value)


def test_field_docs_read_inline_and_per_line_forms():
    assert field_docs(Outer) == {"k": "a positive integer.", "mode": "``a`` or ``b``.",
                                 "ratio": "a number.", "inners": "nested tables (or names).",
                                 "extra": "optional nested table."}


def test_toml_errors_name_file_line_and_key(tmp_path):
    from recaudit.audit import AuditConfig

    path = tmp_path / "a.toml"
    path.write_text('seeds = 2\n\n[[models]]\nname = "gru4rec"\n\n[[models]]\nname = "sasrec"\n'
                    'params = { epochs = 2, lr = "fast" }\n')
    with pytest.raises(ConfigError) as err:
        AuditConfig.from_toml(path)
    e = err.value
    assert (e.source, e.line, e.key) == (str(path), 8, "models[1].params.lr")
    assert "expected a number" in str(e)
    path.write_text('seeds = 2\n[[models]]\nname = "gru4rec"\n')
    assert AuditConfig.from_toml(path).seeds == (0, 1)


def _configs() -> list[type]:
    for mod in pkgutil.walk_packages(recaudit.__path__, "recaudit."):
        if mod.name.endswith(("env", "_recbole_worker", "__main__")):
            continue  # gymnasium is an optional extra; the worker runs in RecBole's Python
        importlib.import_module(mod.name)
    out, todo = [], list(Config.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("recaudit."):
            out.append(cls)
    return out


def test_every_configuration_of_recaudit_documents_every_field():
    configs = _configs()
    names = {c.__name__ for c in configs}
    assert {"AuditConfig", "DatasetSpec", "ModelSpec", "SequentialConfig", "GRU4RecConfig",
            "FunkSVDConfig", "MirrorConfig", "TrainConfig", "FuzzStudy", "EditSpec", "PositionSpec",
            "ReferenceSpec",
            "SyntheticConfig"} <= names
    missing = {f"{c.__name__}.{k}" for c in configs for k, doc in field_docs(c).items()
               if not doc}
    assert not missing, f"fields without documentation: {sorted(missing)}"


def test_every_registered_model_takes_params_and_gives_them_back():
    from recaudit.models import available, create, model_class

    for name in available():
        cls = model_class(name)
        assert issubclass(cls.Config, Config) and dataclasses.is_dataclass(cls.Config)
        required = [f.name for f in dataclasses.fields(cls.Config)
                    if f.default is dataclasses.MISSING
                    and f.default_factory is dataclasses.MISSING]
        if required:  # the command model: its templates (round trip: test_command_model.py)
            with pytest.raises(ConfigError, match=f"missing required key {required[0]!r}"):
                create(name)
            continue
        model = create(name)
        assert model.get_params() == cls.Config().to_dict()
        with pytest.raises(ConfigError, match="has no parameter"):
            create(name, no_such_parameter=1)


def test_the_json_schema_follows_the_declarations():
    from recaudit._schema import json_schema
    from recaudit.audit import AuditConfig

    schema = json_schema(AuditConfig)
    props = schema["properties"]
    assert schema["additionalProperties"] is False and schema["required"] == ["models"]
    assert props["draws"]["type"] == "integer" and props["draws"]["default"] == 1
    assert "perturbation" in props["draws"]["description"]
    ex = schema["$defs"]["ExecutorSpec"]["properties"]["kind"]
    assert set(ex["enum"]) == {"inprocess", "process", "ray"} and ex["default"] == "inprocess"
    model = props["models"]["anyOf"][0]["items"]  # a table or the shorthand string
    assert {"$ref": "#/$defs/ModelSpec"} in model["anyOf"] and {"type": "string"} in model["anyOf"]
    # every field of every nested config is described, as the convention requires
    for name, d in schema["$defs"].items():
        for key, p in d["properties"].items():
            assert p.get("description"), f"{name}.{key}"


def test_the_json_schema_accepts_the_shipped_configs_and_refuses_a_misspelt_key():
    import tomllib

    jsonschema = pytest.importorskip("jsonschema")
    from recaudit._schema import json_schema
    from recaudit.audit import AuditConfig

    schema = json_schema(AuditConfig)
    root = Path(__file__).resolve().parents[2] / "configs"
    for path in sorted(root.glob("*.toml")):
        jsonschema.validate(tomllib.loads(path.read_text()), schema)
    with pytest.raises(jsonschema.ValidationError, match="seeeds"):
        jsonschema.validate({"models": ["gru4rec"], "seeeds": [0]}, schema)
