"""Shared fixtures. Tests point the dataset registry's local mirror at ../shared/data."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

os.environ.setdefault("RECAUDIT_MIRROR", str(SHARED_DATA))

from tests._who_audit import who_audit  # noqa: E402, F401 - a small real audit, session-wide


def pytest_configure(config):
    """Tests of Ctrl-C see what a terminal's foreground command sees. A shell's background job
    (``make test &``, or pytest started by a script) begins with SIGINT ignored, and so would
    every xdist worker: give this process Python's own handler back (the worker processes run
    this hook too)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


#: Tests marked ``slow`` by measurement (``tests/_measure_slow.py``, which turns this off with
#: ``RECAUDIT_SLOW_LIST=0`` to measure them all).
SLOW = REPO / "tests" / "slow.txt"


RAY_TESTS = REPO / "tests" / "ray"


def pytest_collection_modifyitems(config, items):
    # `make test` runs the Ray tests by folder (collecting nothing else): one marked elsewhere
    # would never run there.
    stray = [i.nodeid for i in items if i.get_closest_marker("ray")
             and RAY_TESTS not in Path(i.path).parents]
    if stray:
        raise pytest.UsageError(f"tests marked ray must live in tests/ray/: {stray}")
    if os.environ.get("RECAUDIT_SLOW_LIST") == "0" or not SLOW.is_file():
        return
    listed = {line.strip() for line in SLOW.read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _isolated_data_dir(tmp_path_factory, monkeypatch):
    """Never write into the real per-user cache from tests."""
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path_factory.getbasetemp() / "recaudit-data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present next to the checkout")
    return SHARED_DATA


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]


class _DomCounter(HTMLParser):
    """Counts start tags and collects the text of a DOM dumped by Chromium."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture
def chromium_dom(tmp_path):
    """``dom(path_or_url, *extra_flags) -> (tag counts, page text)`` rendered by headless
    Chromium; skips the test when Debian's ``chromium`` is not installed."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed")

    def dom(html_path, *extra):
        url = html_path if isinstance(html_path, str) else html_path.resolve().as_uri()
        out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                              *extra, "--dump-dom", url],
                             capture_output=True, text=True, timeout=180).stdout
        parsed = _DomCounter()
        parsed.feed(out)
        return parsed.tags, "".join(parsed.text)

    return dom
