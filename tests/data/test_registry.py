"""Dataset registry: mirrors, cache, bundled copies, verified downloads, safe extraction, CLI."""

from __future__ import annotations

import functools
import hashlib
import importlib
import io
import sys
import tarfile
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from recaudit.cli import main
from recaudit.data import datasets
from recaudit.data._download import safe_extract
from recaudit.data._registry import DatasetSource, MirrorFile, Registry, data_dir
from recaudit.errors import DataError, DatasetError, RecauditWarning

REQUIRED = {"ml-100k", "ml-1m", "ml-latest-small", "lastfm", "wikipedia", "reddit",
            "foursquare", "foursquare-nyc", "foursquare-tky", "jester"}
RATINGS = "userId,movieId,rating,timestamp\n1,10,4.0,100\n1,11,3.5,101\n2,10,5.0,102\n"


# ------------------------------------------------------------------------------- fixtures
@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """A fresh download cache per test (the session-wide one would leak between tests)."""
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path / "cache"))


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


@pytest.fixture
def http_root(tmp_path):
    """A directory served over HTTP on 127.0.0.1 (random port) for the duration of a test."""
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield root, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def make_zip(path: Path, members: dict[str, str]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in members.items():
            zf.writestr(name, text)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def spec(url: str, sha: str = "unknown", **kw) -> DatasetSource:
    fields = dict(name="toy", title="toy ratings", url=url, archive="zip",
                  file="toy/ratings.csv", format="movielens", sha256=sha)
    fields.update(kw)
    return DatasetSource(**fields)


# ------------------------------------------------------------------------------- entries
def test_required_datasets_are_registered_with_metadata():
    assert REQUIRED <= set(datasets.list_datasets())
    for name in REQUIRED:
        info = datasets.dataset_info(name)
        assert info["licence"] and info["citation"] and info["title"]
        assert info["url"].startswith("http") or "no direct download" in info["url"]
        # nothing invented: every checksum is a real sha256 or says it is unknown
        sha = info["sha256"]
        assert (len(sha) == 64 and int(sha, 16) >= 0) or sha.startswith("unknown")


def test_unknown_checksum_is_explained_in_info():
    info = datasets.dataset_info("ml-1m")
    assert info["sha256"].startswith("unknown")
    assert "1,000,209 rows" in info["sha256"]


def test_unknown_name_suggests_the_closest():
    with pytest.raises(DatasetError,
                       match=r"unknown dataset 'wikipdia'; known: .*\. Did you mean 'wikipedia'\?"):
        datasets.dataset_info("wikipdia")


def test_registry_rejects_unknown_keys_and_double_registration():
    with pytest.raises(DatasetError, match="unknown key"):
        Registry.from_toml('[x]\ntitle="t"\nurl=""\nfile="f"\nformat="csv"\nsha="00"\n')
    reg = Registry([spec("http://x")])
    with pytest.raises(DatasetError, match="already registered"):
        reg.register(spec("http://y"))
    reg.register(spec("http://y"), replace=True)
    assert reg.spec("toy").url == "http://y"


def test_data_dir_env_override_and_default(monkeypatch, tmp_path):
    monkeypatch.setenv("RECAUDIT_DATA", str(tmp_path / "d"))
    assert data_dir() == tmp_path / "d"
    monkeypatch.delenv("RECAUDIT_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert data_dir() == tmp_path / "xdg" / "recaudit"


# ------------------------------------------------------------------------------- mirrors
def test_wikipedia_from_the_shared_mirror(shared_data, monkeypatch):
    monkeypatch.setenv("RECAUDIT_MIRROR", str(shared_data))
    loc = datasets.locate("wikipedia")
    assert loc.origin == "mirror" and loc.path == shared_data / "wikipedia.tsv"
    log = datasets.load("wikipedia")
    assert (len(log), log.n_users, log.n_items) == (157_474, 8_227, 1_000)
    assert log.name == "wikipedia"
    assert datasets.fetch("ml-latest-small") == shared_data / "ml-latest-small" / "ratings.csv"
    fsq = datasets.load("foursquare")
    assert (len(fsq), fsq.n_users, fsq.n_items) == (194_105, 2_321, 5_596)


def test_mirror_path_list_is_searched_in_order(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    (b / "toy").mkdir(parents=True)
    (b / "toy" / "ratings.csv").write_text(RATINGS)
    monkeypatch.setenv("RECAUDIT_MIRROR", f"{tmp_path / 'missing'}:{a}:{b}")
    reg = Registry([spec("", mirror=(MirrorFile("r.csv", "csv"),))])
    loc = reg.locate("toy")
    assert (loc.origin, loc.path, loc.format) == ("mirror", b / "toy" / "ratings.csv", "movielens")
    (a / "r.csv").write_text("user,item,timestamp\n1,2,3\n")
    loc = reg.locate("toy")
    assert (loc.path, loc.format) == (a / "r.csv", "csv")
    assert len(reg.load("toy")) == 1


def test_offline_miss_without_download_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("RECAUDIT_MIRROR", str(tmp_path))
    reg = Registry([spec("http://127.0.0.1:9/never")])
    with pytest.raises(DatasetError, match="not available offline.*datasets fetch toy"):
        reg.load("toy")
    manual = Registry([spec("")])
    with pytest.raises(DatasetError, match="no direct download URL"):
        manual.fetch("toy", download=True)


# ------------------------------------------------------------------------------- bundled recbole
def test_ml100k_resolves_from_an_installed_recbole_without_importing_it(tmp_path, monkeypatch):
    pkg = tmp_path / "site" / "recbole"
    data = pkg / "dataset_example" / "ml-100k"
    data.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('recbole must not be imported')\n")
    (data / "ml-100k.inter").write_text("user_id:token\titem_id:token\trating:float\t"
                                        "timestamp:float\n196\t242\t3\t881250949\n")
    (data / "ml-100k.item").write_text("item_id:token\tmovie_title:token_seq\t"
                                       "release_year:token\tclass:token_seq\n242\tKolya\t1996\t"
                                       "Comedy\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    importlib.invalidate_caches()
    monkeypatch.setenv("RECAUDIT_MIRROR", str(tmp_path / "empty"))
    loc = datasets.locate("ml-100k")
    assert (loc.origin, loc.format) == ("bundled", "recbole")
    log = datasets.load("ml-100k")
    assert len(log) == 1 and set(log.item_attributes[0]) == {"Comedy"}
    assert "recbole" not in sys.modules


def test_real_recbole_wheel_ml100k(monkeypatch, tmp_path):
    spec_ = importlib.util.find_spec("recbole")
    if spec_ is None:
        pytest.skip("recbole is not installed (pip install --no-deps recbole==1.2.1)")
    monkeypatch.setenv("RECAUDIT_MIRROR", str(tmp_path))
    log = datasets.load("ml-100k")
    assert (len(log), log.n_users, log.n_items) == (100_000, 943, 1_682)


# ------------------------------------------------------------------------------- downloads
def test_download_good_archive_then_cache(http_root, monkeypatch, tmp_path):
    root, base = http_root
    sha = make_zip(root / "toy.zip", {"toy/ratings.csv": RATINGS, "toy/README": "hi"})
    monkeypatch.setenv("RECAUDIT_MIRROR", str(tmp_path / "nowhere"))
    reg = Registry([spec(f"{base}/toy.zip", sha)])
    assert reg.locate("toy") is None
    loc = reg.fetch("toy", download=True)
    assert loc.origin == "download" and loc.path == data_dir() / "toy" / "toy" / "ratings.csv"
    assert not (data_dir() / "toy" / "toy.zip").exists()  # archive removed after extraction
    assert reg.locate("toy").origin == "cache"
    log = reg.load("toy")
    assert (len(log), log.n_users, log.n_items) == (3, 2, 2)


def test_bad_checksum_leaves_nothing(http_root, tmp_path):
    root, base = http_root
    make_zip(root / "toy.zip", {"toy/ratings.csv": RATINGS})
    reg = Registry([spec(f"{base}/toy.zip", "0" * 64)])
    with pytest.raises(DatasetError, match="checksum mismatch"):
        reg.fetch("toy", download=True)
    cache = data_dir() / "toy"
    assert not cache.exists() or list(cache.iterdir()) == []
    assert reg.locate("toy") is None


def test_archive_with_parent_members_is_refused(http_root, tmp_path):
    root, base = http_root
    sha = make_zip(root / "evil.zip", {"toy/ratings.csv": RATINGS, "../evil.txt": "pwned"})
    reg = Registry([spec(f"{base}/evil.zip", sha)])
    with pytest.raises(DatasetError, match="unsafe member '../evil.txt'"):
        reg.fetch("toy", download=True)
    assert not (data_dir() / "evil.txt").exists()
    assert not (data_dir() / "toy" / "toy" / "ratings.csv").exists()  # nothing extracted
    assert reg.locate("toy") is None


def test_unknown_checksum_is_checked_by_rows_and_size(http_root):
    root, base = http_root
    make_zip(root / "toy.zip", {"toy/ratings.csv": RATINGS})
    wrong = Registry([spec(f"{base}/toy.zip", rows=4)])
    with pytest.raises(DatasetError, match="has 3 rows, the registry expects 4"), \
            pytest.warns(RecauditWarning, match="no published checksum"):
        wrong.fetch("toy", download=True)
    assert wrong.locate("toy") is None  # no completion marker
    too_small = Registry([spec(f"{base}/toy.zip", min_bytes=10**6)])
    with pytest.raises(DatasetError, match="expected at least 1000000"):
        too_small.fetch("toy", download=True)
    right = Registry([spec(f"{base}/toy.zip", rows=3)])
    with pytest.warns(RecauditWarning, match="checked by parsing it and counting rows"):
        assert right.fetch("toy", download=True).origin == "download"


def test_plain_file_download_and_http_errors(http_root):
    root, base = http_root
    (root / "wiki.tsv").write_text("0\t5\t1\t0.0\n1\t6\t1\t1.0\n")
    reg = Registry([spec(f"{base}/wiki.tsv", archive="none", file="wiki.tsv",
                         format="tsv-shared", rows=2)])
    with pytest.warns(RecauditWarning, match="no published checksum"):
        assert len(reg.load("toy", download=True)) == 2
    missing = Registry([spec(f"{base}/absent.zip")])
    with pytest.raises(DatasetError, match="download of .*absent.zip failed"):
        missing.fetch("toy", download=True)


# ------------------------------------------------------------------------------- extraction
def _tar(path: Path, add) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        add(tf)
    return path


def _file(tf: tarfile.TarFile, name: str, text: str = "x") -> None:
    info = tarfile.TarInfo(name)
    info.size = len(text)
    tf.addfile(info, io.BytesIO(text.encode()))


def _link(tf: tarfile.TarFile, name: str, target: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    tf.addfile(info)


@pytest.mark.parametrize("build, message", [
    (lambda tf: _file(tf, "/etc/abs.txt"), "absolute path or '..'"),
    (lambda tf: _file(tf, "a/../../up.txt"), "absolute path or '..'"),
    (lambda tf: _link(tf, "a/link", "../../outside"), "points outside"),
    (lambda tf: _link(tf, "a/link", "/etc/passwd"), "points outside"),
])
def test_unsafe_tar_members_are_refused(tmp_path, build, message):
    archive = _tar(tmp_path / "x.tar.gz", lambda tf: (_file(tf, "ok.txt"), build(tf)))
    dest = tmp_path / "out"
    with pytest.raises(DatasetError, match=message):
        safe_extract(archive, dest)
    assert not (dest / "ok.txt").exists()


def test_safe_tar_with_internal_link_extracts(tmp_path):
    archive = _tar(tmp_path / "x.tgz", lambda tf: (_file(tf, "d/data.txt", "hello"),
                                                  _link(tf, "d/alias.txt", "data.txt")))
    safe_extract(archive, tmp_path / "out")
    assert (tmp_path / "out" / "d" / "alias.txt").read_text() == "hello"


def test_zip_symlink_and_absolute_members_are_refused(tmp_path):
    p = tmp_path / "l.zip"
    with zipfile.ZipFile(p, "w") as zf:
        info = zipfile.ZipInfo("link")
        info.external_attr = (0o120777 << 16)
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(DatasetError, match="symbolic link"):
        safe_extract(p, tmp_path / "out")
    q = tmp_path / "a.zip"
    make_zip(q, {"/abs.txt": "x"})
    with pytest.raises(DatasetError, match="absolute path"):
        safe_extract(q, tmp_path / "out2")


# ------------------------------------------------------------------------------- CLI
@pytest.fixture
def toy_registered(http_root):
    root, base = http_root
    sha = make_zip(root / "toy.zip", {"toy/ratings.csv": RATINGS})
    datasets.register_dataset(spec(f"{base}/toy.zip", sha, name="toy-cli"))
    yield "toy-cli"
    datasets.unregister_dataset("toy-cli")


def test_cli_list(capsys):
    assert main(["datasets", "list"]) == 0
    out = capsys.readouterr().out
    for name in REQUIRED:
        assert name in out


def test_cli_info(capsys, shared_data, monkeypatch):
    monkeypatch.setenv("RECAUDIT_MIRROR", str(shared_data))
    assert main(["datasets", "info", "wikipedia"]) == 0
    out = capsys.readouterr().out
    assert "sha256" in out and "unknown" in out
    assert f"mirror: {shared_data / 'wikipedia.tsv'}" in out.replace("\n", "")


def test_cli_unknown_dataset_is_one_line_exit_2(capsys):
    for cmd in ("info", "fetch"):
        assert main(["datasets", cmd, "no-such-data"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: unknown dataset 'no-such-data'")
        assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_cli_fetch_downloads(capsys, toy_registered):
    assert main(["datasets", "fetch", toy_registered]) == 0
    out = capsys.readouterr().out
    assert "(download)" in out and "ratings.csv" in out
    assert main(["datasets", "fetch", toy_registered]) == 0
    assert "(cache)" in capsys.readouterr().out


def test_unknown_checksum_download_must_parse(http_root):
    root, base = http_root
    make_zip(root / "toy.zip", {"toy/ratings.csv": "userId,movieId,rating,timestamp\n1,2,x,3\n"})
    reg = Registry([spec(f"{base}/toy.zip")])
    with pytest.raises(DataError, match="rating is not a finite number"), \
            pytest.warns(RecauditWarning, match="no published checksum"):
        reg.fetch("toy", download=True)
    assert reg.locate("toy") is None
