"""Canonical JSON and content ids: a trial's id is the hash of its spec and its data.

``canonical_json`` writes plain data with sorted keys and no whitespace (configs, mappings,
tuples and numpy scalars are converted first), so equal specs give equal text; ``spec_id`` is
the first 20 hex digits of ``sha256(canonical_json(spec) + data fingerprint)``. Ids never depend
on the process, the order of trials or the executor.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from recaudit.config import plain

__all__ = ["canonical_json", "spec_id"]


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace) of plain data, configs and dataclasses."""
    return json.dumps(plain(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


def spec_id(spec: Any, fingerprint: str = "", length: int = 20) -> str:
    """``sha256(canonical_json(spec) + fingerprint)``, first ``length`` hex digits."""
    return hashlib.sha256((canonical_json(spec) + fingerprint).encode()).hexdigest()[:length]
