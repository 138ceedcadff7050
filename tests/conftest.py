"""Shared fixtures. Tests point the dataset registry's local mirror at ../shared/data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("RECAUDIT_MIRROR", str(SHARED_DATA))


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch):
    """Never write into the real per-user cache from tests."""
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path_factory.getbasetemp() / "recaudit-data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present next to the checkout")
    return SHARED_DATA
