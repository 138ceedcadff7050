"""The configuration convention of every model: ``Model(**params)``, ``get_params()``.

A model class names its frozen :class:`~recaudit.config.Config` dataclass as ``Model.Config``.
The constructor holds configuration only: it validates ``params`` into ``self.config`` (unknown
or ill-typed parameters are a :class:`~recaudit.errors.ConfigError` naming the closest valid
one) and trains nothing; ``fit`` does the work. ``get_params()`` returns plain data that builds
an equal model: ``type(m)(**m.get_params())``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from recaudit.config import Config

__all__ = ["Configurable"]


class Configurable:
    """Mixin: ``__init__(**params)`` -> ``self.config``; :meth:`get_params`; a readable repr."""

    Config: ClassVar[type[Config]]
    registered_name: ClassVar[str] = "model"
    #: The validated ``Model.Config`` instance (each class knows its own config type).
    config: Any

    def __init__(self, **params: Any) -> None:
        self.config = self.Config.from_dict(params, what=f"model {self.registered_name!r}",
                                            noun="parameter")

    def get_params(self) -> dict[str, Any]:
        """The parameters as plain data (``type(self)(**self.get_params())`` is equal)."""
        return self.config.to_dict()

    def __repr__(self) -> str:
        default = self.Config().to_dict()
        changed = {k: v for k, v in self.get_params().items() if default.get(k) != v}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in changed.items())})"
