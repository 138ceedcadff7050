"""The committed reproduction page is what ``recaudit reproduce report`` rebuilds from the
committed records alone (nothing trained): a record changed without the page, or the page
edited by hand, fails here."""

from __future__ import annotations

import os
import re
from pathlib import Path

from recaudit.reproduce import render_report

REPO = Path(__file__).parents[2]


def _without_date(text: str) -> str:
    return re.sub(r" on \d{4}-\d{2}-\d{2}\. ", " on DATE. ", text, count=1)


def test_the_committed_page_rebuilds_from_the_committed_records(monkeypatch):
    monkeypatch.chdir(REPO)  # the page names its records folder relative to the checkout
    page = render_report(Path("docs") / "reproduction" / "records")
    committed = (REPO / "docs" / "reproduction.md").read_text()
    assert _without_date(page) == _without_date(committed), (
        "docs/reproduction.md differs from the records: run `recaudit reproduce report`")
    assert os.listdir(REPO / "docs" / "reproduction" / "records")  # records are committed
