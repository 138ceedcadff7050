"""The committed reproduction page is what ``recaudit reproduce report`` rebuilds from the
committed records alone (nothing trained), and every committed ``record.json`` already says
what the page says: a record changed without the page, the page edited by hand, or claims
whose tests changed without the records brought up to date fails here."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from recaudit.reproduce import write_report

REPO = Path(__file__).parents[2]
RECORDS = REPO / "docs" / "reproduction" / "records"


def _general(text: str) -> str:
    """The page without the two things that name where and when it was written."""
    return re.sub(r"from the run records in `[^`]*` on \d{4}-\d{2}-\d{2}\. ",
                  "from the run records in FOLDER on DATE. ", text, count=1)


def test_the_committed_page_rebuilds_from_the_committed_records(tmp_path):
    assert any(RECORDS.iterdir())  # records are committed
    records = shutil.copytree(RECORDS, tmp_path / "records")  # the report may rewrite them
    page, *refreshed = write_report(records, tmp_path / "reproduction.md")
    assert not refreshed, ("these committed records' verdicts or claim states are not "
                           "today's: run `recaudit reproduce report` and commit them: "
                           + ", ".join(str(p.relative_to(records)) for p in refreshed))
    committed = (REPO / "docs" / "reproduction.md").read_text()
    assert "from the run records in `docs/reproduction/records/` on " in committed
    assert _general(page.read_text()) == _general(committed), (
        "docs/reproduction.md differs from the records: run `recaudit reproduce report`")
