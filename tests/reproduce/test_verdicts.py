"""``recaudit reproduce list``'s verdicts (``reproduce/_verdicts.py``): today's judgement of each
record, remembered under the SHA-256 of the record's files, recaudit's source and the
libraries' versions, and judged again when any of them changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recaudit.reproduce import _verdicts, get, judge, listed_verdict

RECORDS = Path(__file__).parents[2] / "docs" / "reproduction" / "records"
#: two committed records with samples (one of them in two scales) and different verdicts
CASES = [("zhu2023-figure8", "small"), ("zhu2023-figure8", "paper"), ("oh2022-table4", "small")]


@pytest.fixture
def records(tmp_path):
    root = tmp_path / "records"
    for name, scale in CASES:
        shutil.copytree(RECORDS / name / scale, root / name / scale)
    return root


def _judging(monkeypatch) -> list[tuple[str, str]]:
    """Count the records judged (the real judgement still runs)."""
    judged: list[tuple[str, str]] = []

    def counted(root, exp, scale):
        judged.append((exp.name, scale))
        return judge(root, exp, scale)

    monkeypatch.setattr(_verdicts, "judge", counted)
    return judged


def test_the_listed_verdict_is_the_judged_one_and_is_judged_once(records, tmp_path,
                                                                  monkeypatch):
    cache = tmp_path / "cache"
    judged = _judging(monkeypatch)
    verdicts = [listed_verdict(records, get(n), s, cache) for n, s in CASES]
    assert verdicts == [judge(records, get(n), s)[0]["verdict"] for n, s in CASES]
    assert len(set(verdicts)) > 1                 # the cases do not all say the same
    assert judged == CASES and len(list(cache.glob("*.json"))) == len(CASES)
    again = [listed_verdict(records, get(n), s, cache) for n, s in CASES]
    assert again == verdicts and judged == CASES  # remembered: nothing judged again


def test_a_changed_record_or_code_is_judged_again(records, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    name, scale = CASES[0]
    exp = get(name)
    before = listed_verdict(records, exp, scale, cache)
    judged = _judging(monkeypatch)
    # a record whose verdict was written otherwise (its bytes change, its samples do not)
    path = records / name / scale / "record.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "verdict": "not run"}))
    assert listed_verdict(records, exp, scale, cache) == before   # today's, not the file's
    assert judged == [(name, scale)]
    # a samples file changed: every part of the record is in the key
    samples = records / name / scale / "samples.parquet"
    samples.write_bytes(samples.read_bytes())                     # same bytes: remembered
    listed_verdict(records, exp, scale, cache)
    assert len(judged) == 1
    shutil.copy(RECORDS / name / "paper" / "samples.parquet", samples)
    listed_verdict(records, exp, scale, cache)
    assert len(judged) == 2
    # recaudit's source or a library's version changed
    monkeypatch.setattr(_verdicts, "code_fingerprint", lambda: "another checkout")
    listed_verdict(records, exp, scale, cache)
    assert len(judged) == 3


def test_an_unreadable_or_unwritable_cache_is_passed_over(records, tmp_path, monkeypatch):
    name, scale = CASES[2]
    exp = get(name)
    cache = tmp_path / "cache"
    expected = listed_verdict(records, exp, scale, cache)
    (entry,) = cache.glob("*.json")
    entry.write_text('{"verd')                                    # cut short
    judged = _judging(monkeypatch)
    assert listed_verdict(records, exp, scale, cache) == expected
    assert judged == [(name, scale)]
    assert json.loads(entry.read_text())["verdict"] == expected   # written whole again
    blocked = tmp_path / "a file"
    blocked.write_text("not a folder")
    assert listed_verdict(records, exp, scale, blocked / "verdicts") == expected
    assert len(judged) == 2


def test_no_record_no_verdict(tmp_path):
    assert listed_verdict(tmp_path, get("oh2022-table3"), "paper", tmp_path / "cache") is None
    assert not (tmp_path / "cache").exists()


def test_the_code_fingerprint_changes_with_any_source_file(tmp_path, monkeypatch, request):
    import recaudit

    request.addfinalizer(_verdicts.code_fingerprint.cache_clear)  # the real package's after

    package = shutil.copytree(Path(recaudit.__file__).parent, tmp_path / "recaudit",
                              ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(recaudit, "__file__", str(package / "__init__.py"))

    def fingerprint() -> str:
        _verdicts.code_fingerprint.cache_clear()
        return _verdicts.code_fingerprint()

    rules = package / "reproduce" / "rules.py"
    first = fingerprint()
    assert len(first) == 64 and first == fingerprint()
    text = rules.read_text()
    rules.write_text(text + "\n# an edit\n")
    assert fingerprint() != first
    rules.write_text(text)
    assert fingerprint() == first
    (package / "reproduce" / "_another.py").write_text("")   # a new file counts too
    assert fingerprint() != first
